// Users and their devices: sync position and lag per zone, waiting now, pairing and revocation.
import { api, el, table, time, ago, form } from "/ui.js";

export async function users() {
  const { users } = await api("/api/users");
  return [el("h1", {}, "Users"), table(["User", "Devices", "Created", "userRecordName", ""],
    users.map((u) => [el("a", { href: `#/users/${encodeURIComponent(u.name)}` }, u.name), u.activeTokens, time(u.createdAt), u.userRecordName,
      el("a", { href: `#/records?user=${encodeURIComponent(u.name)}` }, "records")]))];
}

function lagText(lag, max) {
  if (lag === 0) return "up to date";
  return lag > max ? `more than ${max} records behind` : `${lag} record${lag === 1 ? "" : "s"} behind`;
}

export async function user(name, rerender) {
  const { devices, maxCountedLag } = await api(`/api/users/${encodeURIComponent(name)}/devices`);
  const pairing = el("div", { id: "pairing" });
  const pair = async () => {
    const issued = await api(`/api/users/${encodeURIComponent(name)}/pair`, { method: "POST", body: "{}" });
    const qr = el("div", { class: "qr" });
    qr.append(new DOMParser().parseFromString(issued.qrSVG, "image/svg+xml").documentElement);
    pairing.replaceChildren(el("p", {}, "Code ", el("strong", { id: "pairing-code" }, issued.code), ` (expires ${time(issued.expiresAt)})`),
      qr, el("p", { class: "muted" }, issued.pairingURL));
  };
  const revoke = (tokenID) => async () => {
    if (!confirm(`Revoke ${tokenID}? Its next request is refused.`)) return;
    await api("/api/devices/revoke", { method: "POST", body: JSON.stringify({ tokenID }) });
    rerender();
  };
  const zoneRows = devices.flatMap((d) => d.zones.map((z) => [d.deviceName, d.tokenID, z.container, z.environment, z.zoneName,
    ago(z.lastSyncAt), el("span", { class: z.lag > 0 ? "behind" : "", "data-lag": `${d.tokenID}/${z.zoneName}` }, lagText(z.lag, maxCountedLag))]));
  return [el("h1", {}, `Devices of ${name}`),
    table(["Token id", "Device", "Created", "Last used", "Waiting now", ""], devices.map((d) => [
      d.tokenID, d.deviceName, time(d.createdAt), ago(d.lastUsedAt), d.waiting ? "yes" : "no",
      d.revokedAt ? `revoked ${time(d.revokedAt)}` : el("button", { type: "button", "data-revoke": d.tokenID, onclick: revoke(d.tokenID) }, "Revoke")])),
    el("h2", {}, "Last sync per zone (lag: records changed since the device's last records/changes)"),
    zoneRows.length ? table(["Device", "Token id", "Container", "Environment", "Zone", "Last sync", "Lag"], zoneRows)
      : el("p", { class: "muted" }, "No device has fetched changes yet."),
    el("h2", {}, "Pair a new device"), el("button", { type: "button", id: "pair", onclick: pair }, "Show a pairing code"), pairing,
    el("h2", {}, "Issue a device token"),
    form("issue-token", [{ name: "deviceName", label: "Device name", placeholder: "iPad" }], "Issue", async ({ deviceName }) => {
      const issued = await api(`/api/users/${encodeURIComponent(name)}/tokens`, { method: "POST", body: JSON.stringify({ deviceName }) });
      document.getElementById("issued").replaceChildren(el("p", {}, `token-id: ${issued.tokenID}`),
        el("p", {}, "token (shown once): ", el("code", { id: "issued-token" }, issued.token)));
      return "";
    }), el("div", { id: "issued" })];
}
