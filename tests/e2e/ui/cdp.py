"""A small Chrome DevTools Protocol client for the web view's browser tests.

Starts Debian's headless chromium on an ephemeral DevTools port and drives one
page over the protocol with python3-websocket (Debian's package): navigate,
evaluate JavaScript, await a DOM condition (a MutationObserver inside the
page, not a sleep loop), take screenshots. No npm, no browser download.
"""

import base64
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request

import websocket  # python3-websocket


def find_chromium():
    for name in (os.environ.get("CHROMIUM", ""), "chromium", "chromium-browser",
                 "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


class Browser:
    """One headless chromium process; pages are opened with new_page()."""

    def __init__(self, binary, width=1280, height=760):
        self.profile = tempfile.mkdtemp(prefix="kplane-ui-chromium-")
        self.width, self.height = width, height
        # The control plane's CA is not in the browser's store: the test
        # accepts its certificate as a user clicking through would (the
        # page's own requests are then same-origin HTTPS).
        # Chromium's own scratch files (its singleton lock directory,
        # org.chromium.Chromium.*) go inside the profile, so close() removes
        # them with it; its helper processes share one process group, which
        # close() ends before removing the profile they write into.
        env = dict(os.environ, TMPDIR=os.path.join(self.profile, "tmp"))
        os.mkdir(env["TMPDIR"])
        self.proc = subprocess.Popen(
            [binary, "--headless=new", "--no-sandbox", "--disable-gpu",
             "--disable-dev-shm-usage", "--no-first-run",
             "--ignore-certificate-errors", "--remote-debugging-address=127.0.0.1",
             "--remote-debugging-port=0", "--remote-allow-origins=*",
             "--user-data-dir=" + self.profile,
             "--window-size=%d,%d" % (width, height), "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            env=env, start_new_session=True)
        deadline = time.time() + 30
        self.http = None
        while time.time() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            m = re.search(r"DevTools listening on ws://([^/]+)/", line)
            if m:
                self.http = "http://" + m.group(1)
                break
        if self.http is None:
            self.close()
            raise RuntimeError("chromium did not start its DevTools endpoint")
        # Drain stderr so chromium never blocks on a full pipe.
        import threading
        threading.Thread(target=lambda: [None for _ in self.proc.stderr],
                         daemon=True).start()

    def new_page(self):
        req = urllib.request.Request(self.http + "/json/new?about:blank",
                                     method="PUT")
        with urllib.request.urlopen(req, timeout=10) as r:
            target = json.load(r)
        return Page(target["webSocketDebuggerUrl"], self.width, self.height)

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        # Helpers (zygote, renderers) that outlived the browser process would
        # go on writing into the profile while it is removed.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        shutil.rmtree(self.profile, ignore_errors=True)


class Page:
    def __init__(self, ws_url, width, height):
        self.ws = websocket.create_connection(ws_url, timeout=60,
                                              suppress_origin=True)
        self.next_id = 0
        self.context_id = None
        self.console = []     # log entries (network errors: expected 401s)
        self.exceptions = []  # uncaught exceptions in the page
        self.loads = 0
        self.call("Page.enable")
        self.call("Runtime.enable")
        self.call("Log.enable")
        self.call("Emulation.setDeviceMetricsOverride", width=width,
                  height=height, deviceScaleFactor=1, mobile=False)

    def _event(self, msg):
        event = msg.get("method")
        if event == "Page.loadEventFired":
            self.loads += 1
        # Evaluate in the page's current main world: after a navigation,
        # the default context is the new document's.
        if event == "Runtime.executionContextCreated":
            ctx = msg["params"]["context"]
            if (ctx.get("auxData") or {}).get("isDefault"):
                self.context_id = ctx["id"]
        elif event == "Runtime.executionContextsCleared":
            self.context_id = None
        if event == "Runtime.exceptionThrown":
            self.exceptions.append(json.dumps(msg["params"])[:500])
        elif event == "Log.entryAdded":
            self.console.append(json.dumps(msg["params"])[:500])

    def call(self, method, **params):
        self.next_id += 1
        my_id = self.next_id
        self.ws.send(json.dumps({"id": my_id, "method": method,
                                 "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == my_id:
                if "error" in msg:
                    raise RuntimeError("%s: %s" % (method, msg["error"]))
                return msg.get("result", {})
            self._event(msg)

    def navigate(self, url):
        loads = self.loads
        self.call("Page.navigate", url=url)
        # Await the new document's load event.
        while self.loads == loads:
            self._event(json.loads(self.ws.recv()))
        # The page's script has run (its functions exist).
        if not self.wait("typeof signOut === 'function'", 20):
            raise RuntimeError("the page did not load: %s (context %s; %s; console: %s)" % (
                url, self.context_id,
                self.call("Runtime.evaluate", expression="typeof signOut + ' ' + document.readyState", returnByValue=True),
                self.console))

    def eval(self, expr, await_promise=False):
        params = dict(expression=expr, returnByValue=True,
                      awaitPromise=await_promise)
        if self.context_id is not None:
            params["contextId"] = self.context_id
        r = self.call("Runtime.evaluate", **params)
        if "exceptionDetails" in r:
            raise RuntimeError("JS error in %r: %s" % (expr[:80], r["exceptionDetails"]))
        return r["result"].get("value")

    def wait(self, predicate, timeout):
        """Resolves when the JS expression `predicate` is truthy, awaiting DOM
        mutations (and a 250 ms tick for time-based text) inside the page;
        returns its value, or None after `timeout` seconds."""
        js = """new Promise(resolve => {
          let obs = null, tick = null, t = null;
          const done = v => { if (obs) obs.disconnect(); clearInterval(tick); clearTimeout(t); resolve(v); };
          const check = () => { try { const v = (%s); if (v) { done(v); return true; } } catch (e) {} return false; };
          if (check()) return;
          obs = new MutationObserver(check);
          obs.observe(document.documentElement, {subtree: true, childList: true, characterData: true, attributes: true});
          tick = setInterval(check, 250);
          t = setTimeout(() => done(null), %d);
        })""" % (predicate, int(timeout * 1000))
        return self.eval(js, await_promise=True)

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self):
        self.ws.close()
