// The server's own pages: overview, recent requests, audit trail and configuration.
import { api, el, table, time, ago, card, form, query } from "/ui.js";

/** Requests per minute as stacked bars: 2xx/3xx, 4xx, 5xx (inline SVG, nothing fetched). */
function chart(minutes) {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("class", "chart");
  svg.setAttribute("viewBox", `0 0 ${Math.max(1, minutes.length) * 10} 100`);
  svg.setAttribute("preserveAspectRatio", "none");
  const totals = minutes.map((m) => Object.values(m.countsByStatus).reduce((a, b) => a + b, 0));
  const peak = Math.max(1, ...totals);
  minutes.forEach((minute, index) => {
    let y = 100;
    const groups = { ok: 0, client: 0, server: 0 };
    for (const [status, count] of Object.entries(minute.countsByStatus)) {
      groups[status >= 500 ? "server" : status >= 400 ? "client" : "ok"] += count;
    }
    for (const [kind, count] of Object.entries(groups)) {
      if (!count) continue;
      const height = (count / peak) * 100;
      y -= height;
      const bar = document.createElementNS(ns, "rect");
      bar.setAttribute("class", kind);
      bar.setAttribute("x", index * 10 + 1);
      bar.setAttribute("y", y);
      bar.setAttribute("width", 8);
      bar.setAttribute("height", height);
      const title = document.createElementNS(ns, "title");
      title.textContent = `${time(minute.minute)}: ${count} ${kind}`;
      bar.append(title);
      svg.append(bar);
    }
  });
  return svg;
}

function pruneText(prune) {
  if (!prune) return "never";
  return `${ago(prune.at)}: ${prune.recordsDeleted} records, ${prune.notificationsDeleted} notifications`;
}

export async function overview() {
  const o = await api("/api/overview");
  const sum = (filter) => o.requestsPerMinute.reduce((total, m) =>
    total + Object.entries(m.countsByStatus).filter(([s]) => filter(Number(s))).reduce((a, [, c]) => a + c, 0), 0);
  const codes = Object.entries(o.errorsByCode ?? {}).sort((a, b) => b[1] - a[1]);
  return [el("h1", {}, "Overview"),
    el("div", { class: "cards" },
      card("Version", o.version), card("Up for", `${Math.round(o.uptimeSeconds / 60)} min`),
      card("Database round trip", o.database.reachable ? `${o.database.roundTripMs} ms` : "unreachable"),
      card("Database server", o.database.reachable ? `${o.database.host} (${o.database.role})` : "unreachable"),
      card("Pool in use", `${o.pool.inUse} / ${o.pool.max}`), card("Parked waiters", o.parkedWaiters),
      card("Requests, last hour", sum(() => true)), card("Server errors, last hour", sum((s) => s >= 500)),
      card("Last prune", pruneText(o.lastPrune)),
      card("Next prune", o.nextPruneAt ? time(o.nextPruneAt) : "not scheduled")),
    el("h2", {}, "Requests per minute (green 2xx/3xx, orange 4xx, red 5xx)"), chart(o.requestsPerMinute),
    el("h2", {}, "Errors by serverErrorCode, last hour"),
    codes.length ? table(["serverErrorCode", "Answers"], codes) : el("p", { class: "muted" }, "None.")];
}

export async function requests(parameters) {
  const filters = { status: parameters.get("status") ?? "", route: parameters.get("route") ?? "", user: parameters.get("user") ?? "" };
  const { requests, capacity } = await api(`/api/requests?${query({ ...filters, limit: 200 })}`);
  return [el("h1", {}, "Requests"),
    form("request-filter", [
      { name: "status", label: "Status", value: filters.status, size: 4 },
      { name: "route", label: "Route contains", value: filters.route },
      { name: "user", label: "User", value: filters.user }], "Filter", (values) => {
      location.hash = `#/requests?${query(values)}`;
    }),
    el("p", { class: "muted" }, `The last ${requests.length} matching, of at most ${capacity} kept in memory; no tokens, bodies or query strings.`),
    table(["Time", "Client", "User", "Device", "Method", "Route", "Status", "Code", "ms"], requests.map((r) =>
      [time(r.at), r.client, r.user ?? "", r.device ?? "", r.method, r.route, r.status, r.serverErrorCode ?? "", r.milliseconds]))];
}

export async function audit() {
  const { entries } = await api("/api/audit");
  return [el("h1", {}, "Audit"), table(["Time", "Admin", "Action", "Target", "Detail"],
    entries.map((e) => [time(e.at), `${e.adminName} (${e.tokenID})`, e.action, e.target, JSON.stringify(e.detail)]))];
}

export async function configuration() {
  const c = await api("/api/configuration");
  return [el("h1", {}, "Configuration"),
    el("h2", {}, "Options"), table(["Option", "Value"], Object.entries(c.options)),
    el("h2", {}, "Limits"), table(["Limit", "Value"], Object.entries(c.limits)),
    el("h2", {}, "Migrations"), table(["Version", "Name"], c.migrations.map((m) => [m.version, m.name]))];
}
