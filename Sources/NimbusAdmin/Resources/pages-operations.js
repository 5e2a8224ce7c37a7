// Operations pages: retention (what expires, horizons, devices about to fall behind, dry run and
// prune with progress) and storage (per user and container, largest assets, orphans, quota).
import { api, el, table, time, ago, bytes } from "/ui.js";

function reportTable(report) {
  const rows = report.counts.map((c) => [c.container, c.environment, c.user, c.zoneName, c.recordType, c.records, c.tombstones]);
  return [rows.length ? table(["Container", "Environment", "User", "Zone", "Type", "Records", "Tombstones"], rows)
    : el("p", { class: "muted" }, "No records or tombstones to prune."),
  el("p", {}, `Assets: ${report.assets} (${bytes(report.assetBytes)}); notifications: ${report.notifications}; ${report.seconds.toFixed(1)} s.`)];
}

/** Shows a run's progress, polling until it finishes. */
async function follow(panel, run) {
  for (;;) {
    const verb = run.dryRun ? "Dry run" : "Prune";
    const lines = run.progress.length ? el("pre", { class: "progress" }, run.progress.slice(-10).join("\n")) : "";
    if (run.finishedAt == null) {
      panel.replaceChildren(el("p", { role: "status" }, `${verb} ${run.run} by ${run.startedBy} running since ${time(run.startedAt)}…`), lines);
      await new Promise((resolve) => setTimeout(resolve, 300));
      run = await api("/api/retention/runs/current");
      continue;
    }
    panel.replaceChildren(el("p", { role: "status", id: "run-finished" },
      run.error ? `${verb} ${run.run} failed: ${run.error}` : `${verb} ${run.run} finished ${time(run.finishedAt)}${run.dryRun ? ": it would delete" : ": deleted"}`),
    lines, ...(run.report ? reportTable(run.report) : []));
    return;
  }
}

export async function retention() {
  const [r, current] = await Promise.all([api("/api/retention"), api("/api/retention/runs/current")]);
  const panel = el("div", { id: "run" });
  const start = (dryRun) => async () => {
    if (!dryRun && !confirm("Prune now? Expired records, tombstones, assets and notifications are deleted.")) return;
    try {
      await follow(panel, await api("/api/retention/runs", { method: "POST", body: JSON.stringify({ dryRun }) }));
    } catch (error) {
      panel.replaceChildren(el("p", { class: "error", role: "alert" }, error.message));
    }
  };
  if (current.run != null) follow(panel, current);
  return [el("h1", {}, "Retention"),
    el("p", {}, `Tombstones are kept ${r.tombstoneRetentionDays} days. Next scheduled prune: ${r.nextPruneAt ? time(r.nextPruneAt) : "not scheduled"}.`),
    el("h2", {}, "By record type"),
    r.types.length ? table(["Type", "Expired or expiring within 24 h", "… within 7 d", "Tombstones", "Tombstones expiring at the next prune"],
      r.types.map((t) => [t.recordType, t.expiringWithinDay, t.expiringWithinWeek, t.tombstones, t.tombstonesExpiringNext]))
      : el("p", { class: "muted" }, "Nothing expires and there are no tombstones."),
    el("h2", {}, "Devices that fall behind the next horizon (their next fetch starts over)"),
    r.devicesFallingBehind.length ? table(["User", "Device", "Token id", "Container", "Zone", "Last sync"],
      r.devicesFallingBehind.map((d) => [d.user, d.deviceName, d.tokenID, `${d.container} (${d.environment})`, d.zoneName, ago(d.lastSyncAt)]))
      : el("p", { class: "muted" }, "None."),
    el("h2", {}, "Zone horizons (tokens older than the horizon get CHANGE_TOKEN_EXPIRED)"),
    r.horizons.length ? table(["User", "Container", "Zone", "Horizon", "Head"],
      r.horizons.map((z) => [z.user, `${z.container} (${z.environment})`, z.zoneName, z.horizon, z.head]))
      : el("p", { class: "muted" }, "No zone has a horizon yet."),
    el("h2", {}, "Run"),
    el("p", {}, el("button", { type: "button", id: "dry-run", onclick: start(true) }, "Dry run"), " ",
      el("button", { type: "button", id: "prune", onclick: start(false) }, "Prune now")),
    panel];
}

export async function storage() {
  const s = await api("/api/storage");
  return [el("h1", {}, "Storage"),
    el("h2", {}, "By user, container and environment (the 100 largest)"),
    table(["User", "Container", "Environment", "Records", "Tombstones", "Record bytes", "Assets", "Asset bytes"], s.databases.map((d) =>
      [d.user, d.container, d.environment, d.records, d.tombstones, bytes(d.recordBytes), d.assets, bytes(d.assetBytes)])),
    el("h2", {}, `Quota use of the 100 users storing most (userQuotaBytes ${bytes(s.userQuotaBytes)})`),
    table(["User", "Asset bytes", "Of quota"], s.quota.map((q) =>
      [q.user, bytes(q.assetBytes), `${((100 * q.assetBytes) / s.userQuotaBytes).toFixed(1)} %`])),
    el("h2", {}, "Largest assets"),
    s.largestAssets.length ? table(["User", "Container", "Size", "Stored", "Referenced by"], s.largestAssets.map((a) =>
      [a.user, a.container, bytes(a.size), time(a.createdAt), a.references ? `${a.references} record(s)` : "nothing (orphan)"]))
      : el("p", { class: "muted" }, "No assets."),
    el("h2", {}, "Orphans awaiting collection"),
    el("p", {}, `${s.orphans.assets} assets (${bytes(s.orphans.bytes)}) no record points at; the prune collects each ${Math.round(s.orphans.graceSeconds / 3600)} h after its last use.`)];
}
