#!/usr/bin/env python3
"""Drive headless Chromium over the DevTools pipe and check a web page step by step.

    python3 cdp.py --origin http://127.0.0.1:PORT --out DIR [--timeout S] [--wait S] STEP...

Standard library only. Chromium is started with --remote-debugging-pipe (fd 3 carries
commands to the browser, fd 4 messages from it, each a JSON text ended by a NUL byte) and
one page is driven through a flat session. Each STEP is one argv word, NAME:ARGUMENT,
split at the first colon:

    visit:PATH          go to ORIGIN+PATH ("/...", may hold "#..."); wait for load + a fresh render
    go:HASH             set location.hash = HASH (no reload) and wait for a fresh render
    click:CSS           wait for document.querySelector(CSS), element.click(); dialogs are accepted
    type:CSS=TEXT       set the element's value to TEXT, dispatch bubbling input + change
    wait-text:TEXT      wait until document.body.innerText contains TEXT
    wait-rendered       wait for a fresh render since the previous step ended (after click/type:
                        since just before the action, so a synchronous re-render counts too)
    expect-absent:CSS   fail unless document.querySelector(CSS) is null
    eval:JS             evaluate JS (promises awaited) and print its value as JSON
    shot:NAME           save a PNG screenshot of the viewport to DIR/NAME.png
    dom:NAME            save document.documentElement.outerHTML to DIR/NAME.html

Render protocol: the page's app sets document.body.dataset.rendered to a new counter value
after every render, and dataset.renderMs to performance.now() when that render finished.
A "fresh render" is a change of the token performance.timeOrigin + rendered, so a new
document counts as fresh even if its counter restarts at the same value.

Checked during the whole run (any hit fails the step that was running): uncaught
exceptions, console.error/console.assert, Log entries of level error (CSP violations,
failed loads), requests to any origin but ORIGIN (data:, blob:, about: allowed),
responses with status >= 500, and failed loads. Requests for /favicon.ico, which Chromium
makes on its own, and loads cancelled by the page or by navigation are not errors.

Every wait is bounded by --wait (default 10 s) and the whole run by --timeout (default
120 s). The viewport is 1280x900. Output: one line per step ("visit" reports the new
document's dataset.renderMs, other timings are wall time), then "ok: N steps" (exit 0) or
"FAIL at step: STEP" (exit 1; 2 for a bad command line). DIR also gets chromium.log (browser stderr) and requests.txt (every URL the
page requested, in order). The browser and its temporary profile are removed on exit.
"""
import argparse, base64, fcntl, json, os, select, shutil, signal, subprocess, sys, tempfile, time
from urllib.parse import urlsplit

FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--metrics-recording-only",
         "--remote-debugging-pipe", "--window-size=1280,900", "--hide-scrollbars"]
STEPS = ("visit", "go", "click", "type", "wait-text", "wait-rendered", "expect-absent",
         "eval", "shot", "dom")
TOKEN_JS = ("(document.body && document.body.dataset.rendered) ? "
            "performance.timeOrigin + '/' + document.body.dataset.rendered : ''")


class StepFailed(Exception): pass
class TimedOut(Exception): pass


def origin_of(url):
    u = urlsplit(url)
    port = u.port or {"http": 80, "https": 443}.get(u.scheme)
    return (u.scheme, (u.hostname or "").lower(), port)


def is_favicon(url):
    return urlsplit(url).path == "/favicon.ico"


def describe(details):  # Runtime.ExceptionDetails -> one message
    return details.get("exception", {}).get("description") or details.get("text", "?")


class Browser:
    def __init__(self, out_dir, deadline):
        self.deadline, self.next_id, self.buf = deadline, 0, b""
        self.responses, self.session, self.loaded, self.origin = {}, None, False, None
        self.errors, self.requests, self.urls = [], [], {}
        self.profile = tempfile.mkdtemp(prefix="cdp-profile-")
        cmd_r, self.cmd_w = os.pipe()   # browser reads commands from fd 3
        self.msg_r, msg_w = os.pipe()   # browser writes messages to fd 4

        def arrange_fds():  # in the child: move the pipe ends to exactly fds 3 and 4
            a, b = fcntl.fcntl(cmd_r, fcntl.F_DUPFD, 10), fcntl.fcntl(msg_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3); os.dup2(b, 4); os.close(a); os.close(b)

        self.log = open(os.path.join(out_dir, "chromium.log"), "wb")
        try:
            self.proc = subprocess.Popen(
                ["chromium", *FLAGS, "--user-data-dir=" + self.profile, "about:blank"],
                stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log, close_fds=False,
                preexec_fn=arrange_fds, start_new_session=True)  # own group: killpg reaches renderers
        except OSError as e:
            self.log.close(); shutil.rmtree(self.profile, ignore_errors=True)
            raise StepFailed(f"cannot start chromium: {e}")
        finally:
            os.close(cmd_r); os.close(msg_w)

    def close(self):
        """Kill the browser's whole process group (renderers too), then drop the profile."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.proc.pid, sig)
                self.proc.wait(3)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        os.close(self.cmd_w); os.close(self.msg_r); self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    # --- transport -------------------------------------------------------------------
    def send(self, method, params=None, session=True):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        try:
            os.write(self.cmd_w, json.dumps(msg).encode() + b"\0")
        except BrokenPipeError:
            raise StepFailed("browser closed the DevTools pipe (crashed?)") from None
        return self.next_id

    def pump(self, until, done=lambda: False):
        """Handle incoming messages until time `until` (or the global deadline) or done()."""
        polled = False
        while True:
            if b"\0" in self.buf:
                raw, self.buf = self.buf.split(b"\0", 1)
                self.dispatch(json.loads(raw))
                if done():
                    return
                continue
            left = max(0.0, min(until, self.deadline) - time.monotonic())
            if left == 0 and polled:
                return
            polled = True
            if not select.select([self.msg_r], [], [], left)[0]:
                return  # nothing more arrived in time
            chunk = os.read(self.msg_r, 1 << 20)
            if not chunk:
                raise StepFailed("browser closed the DevTools pipe (crashed?)")
            self.buf += chunk

    def call(self, method, params=None, wait=10.0, session=True):
        mid, end = self.send(method, params, session), time.monotonic() + wait
        while mid not in self.responses:
            if time.monotonic() >= min(end, self.deadline):
                raise TimedOut(method)
            self.pump(end, lambda: mid in self.responses)
        resp = self.responses.pop(mid)
        if "error" in resp:
            raise StepFailed(f"{method}: {resp['error'].get('message')}")
        return resp.get("result", {})

    # --- events ----------------------------------------------------------------------
    def dispatch(self, msg):
        if "id" in msg:
            self.responses[msg["id"]] = msg
            return
        if msg.get("sessionId") != self.session:
            return
        m, p = msg.get("method"), msg.get("params", {})
        if m == "Page.loadEventFired":
            self.loaded = True
        elif m == "Page.javascriptDialogOpening":
            print(f"  (accepting {p.get('type')} dialog: {p.get('message')!r})")
            self.send("Page.handleJavaScriptDialog",  # its reply is ignored
                      {"accept": True, "promptText": p.get("defaultPrompt", "")})
        elif m == "Runtime.exceptionThrown":
            self.errors.append("exception: " + describe(p.get("exceptionDetails", {})))
        elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
            self.errors.append(f"console.{p['type']}: {text}")
        elif m == "Log.entryAdded":
            e = p.get("entry", {})
            if e.get("level") == "error" and not is_favicon(e.get("url", "")):
                self.errors.append(f"log ({e.get('source')}): {e.get('text')} {e.get('url', '')}".rstrip())
        elif m == "Network.requestWillBeSent":
            url = p["request"]["url"]
            self.urls[p["requestId"]] = url
            self.requests.append(url)
            if url.split(":", 1)[0] not in ("data", "blob", "about") and origin_of(url) != self.origin:
                self.errors.append("request to another origin: " + url)
        elif m == "Network.responseReceived" and p["response"].get("status", 0) >= 500:
            self.errors.append(f"HTTP {p['response']['status']} for {p['response']['url']}")
        elif m == "Network.loadingFailed":
            url = self.urls.get(p.get("requestId"), "?")
            if not p.get("canceled") and not is_favicon(url):
                self.errors.append(f"load failed: {url} ({p.get('errorText')})")

    # --- page helpers ----------------------------------------------------------------
    def attach(self, origin):
        self.origin = origin_of(origin)
        pages = [t for t in self.call("Target.getTargets", session=False)["targetInfos"]
                 if t["type"] == "page"]
        tid = pages[0]["targetId"] if pages else self.call(
            "Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": tid, "flatten": True},
                                 session=False)["sessionId"]
        for domain in ("Runtime", "Page", "Network", "Log"):
            self.call(domain + ".enable")
        # headless=new subtracts invisible browser UI from --window-size (1280x900 gives a
        # 1280x757 viewport), so pin the viewport itself
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False})

    def evaluate(self, js, wait=10.0):
        """Runtime.evaluate -> the RemoteObject (promises awaited, values by value)."""
        r = self.call("Runtime.evaluate", {"expression": js, "awaitPromise": True,
                                           "returnByValue": True}, wait)
        if "exceptionDetails" in r:
            raise StepFailed("evaluation threw: " + describe(r["exceptionDetails"]))
        return r.get("result", {})

    def eval(self, js, wait=10.0):
        return self.evaluate(js, wait).get("value")

    def wait_for(self, js, wait):
        """Poll `js` until it yields a truthy value; return it or raise TimedOut."""
        end = time.monotonic() + wait
        while True:
            value = self.eval(js, max(0.1, end - time.monotonic()))
            if value:
                return value
            if time.monotonic() >= min(end, self.deadline):
                raise TimedOut(js)
            self.pump(time.monotonic() + 0.025)

    def wait_fresh(self, before, wait):
        return self.wait_for(f"(() => {{ const t = {TOKEN_JS}; "
                             f"return t !== '' && t !== {json.dumps(before)} ? t : ''; }})()", wait)


def run_step(b, step, args, state):
    name, _, arg = step.partition(":")
    t0, wait, baseline = time.monotonic(), args.wait, None
    ms = lambda: round((time.monotonic() - t0) * 1000)
    if name == "visit":
        if not arg.startswith("/"):
            raise StepFailed("visit PATH must start with '/'")
        before, b.loaded = b.eval(TOKEN_JS, wait), False
        nav = b.call("Page.navigate", {"url": args.origin + arg}, wait)
        if nav.get("errorText"):
            raise StepFailed(f"navigation failed: {nav['errorText']}")
        if nav.get("loaderId"):  # a new document; same-document (hash) moves fire no load event
            b.pump(time.monotonic() + wait, lambda: b.loaded)
            if not b.loaded:
                raise TimedOut("load event")
        b.wait_fresh(before, wait)
        render_ms = b.eval("document.body.dataset.renderMs || ''") if nav.get("loaderId") else ""
        print(f"visit {arg} ready in {round(float(render_ms)) if render_ms else ms()} ms")
    elif name == "go":
        before = b.eval(TOKEN_JS, wait)
        b.eval(f"location.hash = {json.dumps(arg)}; true", wait)
        b.wait_fresh(before, wait)
        print(f"go {arg} ready in {ms()} ms")
    elif name == "click":
        b.wait_for(f"!!document.querySelector({json.dumps(arg)})", wait)
        baseline = b.eval(TOKEN_JS, wait)
        b.eval(f"document.querySelector({json.dumps(arg)}).click(); true", wait)
        print(f"click {arg}")
    elif name == "type":
        css, sep, text = arg.partition("=")
        if not sep:
            raise StepFailed("type needs CSS=TEXT")
        b.wait_for(f"!!document.querySelector({json.dumps(css)})", wait)
        baseline = b.eval(TOKEN_JS, wait)
        b.eval(f"""(el => {{ el.value = {json.dumps(text)};
            for (const t of ['input', 'change']) el.dispatchEvent(new Event(t, {{bubbles: true}}));
            return true; }})(document.querySelector({json.dumps(css)}))""", wait)
        print(f"type {css}")
    elif name == "wait-text":
        b.wait_for(f"!!document.body && document.body.innerText.includes({json.dumps(arg)})", wait)
        print(f"text found: {arg}")
    elif name == "wait-rendered":
        b.wait_fresh(state["token"], wait)
        print(f"rendered in {ms()} ms")
    elif name == "expect-absent":
        if b.eval(f"!!document.querySelector({json.dumps(arg)})", wait):
            raise StepFailed(f"element is present: {arg}")
        print(f"absent: {arg}")
    elif name == "eval":
        res = b.evaluate(arg, wait)
        print("eval = " + (json.dumps(res["value"]) if "value" in res else res.get("type", "undefined")))
    elif name == "shot":
        data = b.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": False}, wait)
        with open(os.path.join(args.out, arg + ".png"), "wb") as f:
            f.write(base64.b64decode(data["data"]))
        print(f"shot {arg}.png")
    elif name == "dom":
        with open(os.path.join(args.out, arg + ".html"), "w", encoding="utf-8") as f:
            f.write(b.eval("document.documentElement.outerHTML", wait))
        print(f"dom {arg}.html")
    b.pump(time.monotonic())  # take in whatever has already arrived
    # the next wait-rendered waits for a render newer than this step's end -- or, after
    # click/type, newer than the moment just before the action (its render may be synchronous)
    state["token"] = baseline if baseline is not None else b.eval(TOKEN_JS, wait)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog="steps: see the module docstring")
    ap.add_argument("--origin", required=True, help="e.g. http://127.0.0.1:8080")
    ap.add_argument("--out", required=True, help="directory for screenshots, DOM dumps, logs")
    ap.add_argument("--timeout", type=float, default=120.0, help="deadline for the whole run (s)")
    ap.add_argument("--wait", type=float, default=10.0, help="bound for each single wait (s)")
    ap.add_argument("steps", nargs="+", metavar="STEP")
    args = ap.parse_args()
    args.origin = args.origin.rstrip("/")
    bad = [s for s in args.steps if s.partition(":")[0] not in STEPS]
    if bad:
        ap.error(f"unknown step(s): {' '.join(bad)} (known: {' '.join(STEPS)})")
    os.makedirs(args.out, exist_ok=True)
    for sig in (signal.SIGTERM, signal.SIGINT):  # so `finally` also runs under timeout(1), ^C
        signal.signal(sig, lambda n, _: sys.exit(128 + n))
    b, step, state, errors = None, "(start)", {"token": ""}, []
    try:
        b = Browser(args.out, time.monotonic() + args.timeout)
        errors = b.errors
        b.attach(args.origin)
        for step in args.steps:
            started = time.monotonic()
            try:
                run_step(b, step, args, state)
            except TimedOut:
                b.deadline = max(b.deadline, time.monotonic() + 5)  # room for the report
                print("".join("error: " + e + "\n" for e in errors), end="")
                print(f"FAIL at step: {step} (timed out after {time.monotonic() - started:.1f} s)")
                try:
                    print("page text:\n" + (b.eval("document.body ? document.body.innerText : ''", 3) or "")[:2000])
                except (TimedOut, StepFailed) as e:
                    print(f"(page text unavailable: {e})")
                return 1
            if errors:
                break
        else:
            b.pump(time.monotonic() + 0.3)  # late async errors still count against the last step
    except (StepFailed, TimedOut) as e:
        errors.append(("timed out: " if isinstance(e, TimedOut) else "") + str(e))
    finally:
        if b:
            with open(os.path.join(args.out, "requests.txt"), "w") as f:
                f.write("".join(u + "\n" for u in b.requests))
            b.close()
    if errors:
        print("".join("error: " + e + "\n" for e in errors) + f"FAIL at step: {step}")
        return 1
    print(f"ok: {len(args.steps)} steps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
