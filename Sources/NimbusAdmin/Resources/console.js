// The Nimbus admin console: ES modules, no framework. It talks only to this origin's /api/ with
// the admin token kept in sessionStorage (never a cookie). Pages are chosen by the URL hash,
// `#/page/argument?parameters`; after each render `document.body.dataset.rendered` counts up and
// `renderMs` says how long it took (from navigation start for the first), for tests and benches.
import { tokenKey, session, el } from "/ui.js";
import { overview, requests, audit, configuration } from "/pages-server.js";
import { users, user } from "/pages-devices.js";
import { records, schema } from "/pages-data.js";
import { retention, storage } from "/pages-operations.js";
import { push } from "/pages-push.js";

const main = document.getElementById("page");
const pages = { overview, users, records, schema, retention, storage, push, requests, audit, configuration };
let renders = 0;

function showSignIn(reason) {
  document.getElementById("nav").hidden = true;
  main.replaceChildren();
  document.getElementById("sign-in").hidden = false;
  document.getElementById("sign-in-error").textContent = reason ?? "";
  document.body.dataset.page = "sign-in";
  document.body.dataset.renderMs = String(Math.round(performance.now()));
  document.body.dataset.rendered = String(++renders);
}
session.showSignIn = showSignIn;

async function render() {
  if (!sessionStorage.getItem(tokenKey)) return showSignIn();
  const started = renders === 0 ? 0 : performance.now();
  document.getElementById("sign-in").hidden = true;
  document.getElementById("nav").hidden = false;
  const [path, search = ""] = location.hash.slice(1).split("?");
  const [, page = "overview", argument] = path.split("/");
  const parameters = new URLSearchParams(search);
  for (const link of document.querySelectorAll("#nav a")) link.classList.toggle("current", link.hash.split("/")[1].split("?")[0] === page);
  try {
    const content = page === "users" && argument ? await user(decodeURIComponent(argument), render)
      : await (pages[page] ?? overview)(parameters, render);
    main.replaceChildren(...content);
  } catch (error) {
    if (!sessionStorage.getItem(tokenKey)) return;
    main.replaceChildren(el("p", { class: "error", role: "alert" }, error.message));
  }
  document.body.dataset.page = page;
  document.body.dataset.renderMs = String(Math.round(performance.now() - started));
  document.body.dataset.rendered = String(++renders);
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
const [hashPath, hashSearch = ""] = location.hash.slice(1).split("?");
const fragment = new URLSearchParams(hashSearch);
if (fragment.get("token")) {
  sessionStorage.setItem(tokenKey, fragment.get("token"));
  fragment.delete("token");
  history.replaceState(null, "", location.pathname + "#" + hashPath + (fragment.size ? `?${fragment}` : ""));
}
window.addEventListener("hashchange", render);
render();
