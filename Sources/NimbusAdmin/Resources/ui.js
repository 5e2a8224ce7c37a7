// What every console page uses: the admin API client, element builders and formatting.
// The token lives in sessionStorage (never a cookie); a 401 sends the page back to sign-in.
export const tokenKey = "nimbus.adminToken";

/** Shows the sign-in form (the console's router supplies it at start). */
export const session = { showSignIn: (_reason) => {} };

/** Calls the admin API; throws an Error carrying the server's reason. */
export async function api(path, options = {}) {
  const response = await fetch(path, {
    ...options,
    headers: { Authorization: `Bearer ${sessionStorage.getItem(tokenKey)}`, "Content-Type": "application/json" },
  });
  const body = await response.json();
  if (response.status === 401) {
    sessionStorage.removeItem(tokenKey);
    session.showSignIn(body.reason);
    throw new Error(body.reason);
  }
  if (!response.ok) throw new Error(`${body.serverErrorCode}: ${body.reason}`);
  return body;
}

/** Builds an element: el("td", {class: "x", onclick: f}, "text", child). */
export function el(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else element.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) element.append(child instanceof Node ? child : document.createTextNode(String(child ?? "")));
  return element;
}

export function table(headings, rows) {
  return el("table", {}, el("thead", {}, el("tr", {}, ...headings.map((h) => el("th", {}, h)))),
    el("tbody", {}, ...rows.map((cells) => el("tr", {}, ...cells.map((c) => el("td", {}, c))))));
}

export const time = (ms) => (ms == null ? "never" : new Date(ms).toISOString().replace("T", " ").slice(0, 19) + " UTC");

export function ago(ms) {
  if (ms == null) return "never";
  const seconds = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (seconds < 60) return `${seconds} s ago`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.round(seconds / 3600)} h ago`;
  return `${Math.round(seconds / 86400)} d ago`;
}

export function bytes(count) {
  if (count == null) return "";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = count, unit = 0;
  while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit += 1; }
  return `${unit === 0 ? value : value.toFixed(1)} ${units[unit]}`;
}

export const card = (label, value) => el("div", { class: "card" }, el("div", { class: "muted" }, label), el("div", { class: "value" }, value));

/** A form of labelled fields whose submit runs `action(values)`; errors show beside it. */
export function form(id, fields, submitLabel, action) {
  const status = el("p", { class: "muted", id: `${id}-status`, role: "status" });
  const element = el("form", { id, class: "toolbar" },
    ...fields.map((f) => el("label", {}, f.label, " ", f.options
      ? el("select", { name: f.name }, ...f.options.map((o) => el("option", { value: o, selected: o === f.value }, o)))
      : el("input", { name: f.name, value: f.value ?? "", placeholder: f.placeholder ?? "", size: f.size ?? 14 }))),
    el("button", { type: "submit" }, submitLabel), status);
  element.addEventListener("submit", async (event) => {
    event.preventDefault();
    const values = Object.fromEntries(new FormData(element).entries());
    status.textContent = "…";
    status.className = "muted";
    try {
      status.textContent = (await action(values)) ?? "";
    } catch (error) {
      status.textContent = error.message;
      status.className = "error";
    }
  });
  return element;
}

/** A query string from the non-empty values. */
export const query = (values) => new URLSearchParams(Object.entries(values).filter(([, v]) => v !== "" && v != null)).toString();
