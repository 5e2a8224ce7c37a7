// The Nimbus admin console: one ES module, no framework. It talks only to this origin's /api/
// with the admin token kept in sessionStorage (never a cookie). Pages are chosen by the URL hash.
const tokenKey = "nimbus.adminToken";
const main = document.getElementById("page");

/** Calls the admin API; throws an Error carrying the server's reason. */
async function api(path, options = {}) {
  const response = await fetch(path, {
    ...options,
    headers: { Authorization: `Bearer ${sessionStorage.getItem(tokenKey)}`, "Content-Type": "application/json" },
  });
  const body = await response.json();
  if (response.status === 401) {
    sessionStorage.removeItem(tokenKey);
    showSignIn(body.reason);
    throw new Error(body.reason);
  }
  if (!response.ok) throw new Error(`${body.serverErrorCode}: ${body.reason}`);
  return body;
}

/** Builds an element: el("td", {class: "x"}, "text", child). */
function el(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else element.setAttribute(name, value);
  }
  for (const child of children) element.append(child instanceof Node ? child : document.createTextNode(String(child ?? "")));
  return element;
}

function table(headings, rows) {
  return el("table", {}, el("thead", {}, el("tr", {}, ...headings.map((h) => el("th", {}, h)))),
    el("tbody", {}, ...rows.map((cells) => el("tr", {}, ...cells.map((c) => el("td", {}, c))))));
}

const time = (ms) => (ms == null ? "never" : new Date(ms).toISOString().replace("T", " ").slice(0, 19) + " UTC");

function ago(ms) {
  if (ms == null) return "never";
  const seconds = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (seconds < 60) return `${seconds} s ago`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.round(seconds / 3600)} h ago`;
  return `${Math.round(seconds / 86400)} d ago`;
}

/** Requests per minute as stacked bars: 2xx/3xx, 4xx, 5xx (inline SVG, nothing fetched). */
function chart(minutes) {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("class", "chart");
  svg.setAttribute("viewBox", `0 0 ${minutes.length * 10} 100`);
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

const card = (label, value) => el("div", { class: "card" }, el("div", { class: "muted" }, label), el("div", { class: "value" }, value));

const pages = {
  async overview() {
    const o = await api("/api/overview");
    const answered = o.requestsPerMinute.reduce((sum, m) => sum + Object.values(m.countsByStatus).reduce((a, b) => a + b, 0), 0);
    const errors = o.requestsPerMinute.reduce((sum, m) =>
      sum + Object.entries(m.countsByStatus).filter(([s]) => s >= 500).reduce((a, [, c]) => a + c, 0), 0);
    return [el("h1", {}, "Overview"),
      el("div", { class: "cards" },
        card("Version", o.version), card("Up for", `${Math.round(o.uptimeSeconds / 60)} min`),
        card("Database round trip", o.database.reachable ? `${o.database.roundTripMs} ms` : "unreachable"),
        card("Pool in use", `${o.pool.inUse} / ${o.pool.max}`), card("Parked waiters", o.parkedWaiters),
        card("Requests, last hour", answered), card("Server errors, last hour", errors)),
      el("h2", {}, "Requests per minute (green 2xx/3xx, orange 4xx, red 5xx)"), chart(o.requestsPerMinute)];
  },

  async users() {
    const { users } = await api("/api/users");
    return [el("h1", {}, "Users"), table(["User", "Devices", "Created", "userRecordName"],
      users.map((u) => [el("a", { href: `#/users/${encodeURIComponent(u.name)}` }, u.name), u.activeTokens, time(u.createdAt), u.userRecordName]))];
  },

  async user(name) {
    const { devices } = await api(`/api/users/${encodeURIComponent(name)}/devices`);
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
      render();
    };
    return [el("h1", {}, `Devices of ${name}`),
      table(["Token id", "Device", "Created", "Last used", "Waiting now", ""], devices.map((d) => [
        d.tokenID, d.deviceName, time(d.createdAt), ago(d.lastUsedAt), d.waiting ? "yes" : "no",
        d.revokedAt ? `revoked ${time(d.revokedAt)}` : el("button", { type: "button", "data-revoke": d.tokenID, onclick: revoke(d.tokenID) }, "Revoke")])),
      el("h2", {}, "Pair a new device"), el("button", { type: "button", id: "pair", onclick: pair }, "Show a pairing code"), pairing];
  },

  async requests() {
    const { requests, capacity } = await api("/api/requests?limit=200");
    return [el("h1", {}, "Requests"), el("p", { class: "muted" }, `The last ${requests.length} of at most ${capacity} kept in memory; no tokens or bodies.`),
      table(["Time", "Method", "Route", "Status", "ms"], requests.map((r) => [time(r.at), r.method, r.route, r.status, r.milliseconds]))];
  },

  async audit() {
    const { entries } = await api("/api/audit");
    return [el("h1", {}, "Audit"), table(["Time", "Admin", "Action", "Target", "Detail"],
      entries.map((e) => [time(e.at), `${e.adminName} (${e.tokenID})`, e.action, e.target, JSON.stringify(e.detail)]))];
  },

  async configuration() {
    const c = await api("/api/configuration");
    return [el("h1", {}, "Configuration"),
      el("h2", {}, "Options"), table(["Option", "Value"], Object.entries(c.options)),
      el("h2", {}, "Limits"), table(["Limit", "Value"], Object.entries(c.limits)),
      el("h2", {}, "Migrations"), table(["Version", "Name"], c.migrations.map((m) => [m.version, m.name]))];
  },
};

function showSignIn(reason) {
  document.getElementById("nav").hidden = true;
  main.replaceChildren();
  document.getElementById("sign-in").hidden = false;
  document.getElementById("sign-in-error").textContent = reason ?? "";
}

async function render() {
  if (!sessionStorage.getItem(tokenKey)) return showSignIn();
  document.getElementById("sign-in").hidden = true;
  document.getElementById("nav").hidden = false;
  const [, page = "overview", argument] = location.hash.split("/");
  for (const link of document.querySelectorAll("#nav a")) link.classList.toggle("current", link.hash.split("/")[1] === page);
  try {
    const content = page === "users" && argument ? await pages.user(decodeURIComponent(argument)) : await (pages[page] ?? pages.overview)();
    main.replaceChildren(...content);
    document.body.dataset.page = page;
  } catch (error) {
    if (sessionStorage.getItem(tokenKey)) main.replaceChildren(el("p", { class: "error", role: "alert" }, error.message));
  }
}

document.getElementById("sign-in").addEventListener("submit", (event) => {
  event.preventDefault();
  sessionStorage.setItem(tokenKey, document.getElementById("token").value.trim());
  render();
});
document.getElementById("sign-out").addEventListener("click", () => {
  sessionStorage.removeItem(tokenKey);
  showSignIn();
});
// Automation (and bookmarks of a fresh tab) may hand the token in the fragment, which no request
// carries: it is moved into sessionStorage and removed from the address at once.
const fragment = new URLSearchParams(location.hash.slice(1).split("?")[1] ?? "");
if (fragment.get("token")) {
  sessionStorage.setItem(tokenKey, fragment.get("token"));
  history.replaceState(null, "", location.pathname + location.hash.split("?")[0]);
}
window.addEventListener("hashchange", render);
render();
