#!/usr/bin/python3
"""The API server's CPU with N open web views (issue 21's measurement).

  measure_cpu.py --kplane build/kplane --kpctl build/cmd/kpctl/kpctl \
      --nodes 1000 --views 20 --seconds 30

Starts `kplane up --nodes N` (one embedded store member, kube's default
lease interval of 10 s), measures the process's CPU (utime + stime of the
whole `kplane up`: API server, store, controllers and the simulated fleet)
for --seconds with no view open, then opens --views pages in headless
chromium, each in its own browser context (its own connections: a browser
keeps 6 per server), signs each in, waits until every one lists all nodes,
and measures again. The difference is what the views cost. Not part of the
test suite (a benchmark); docs/ui.md has the numbers.

With --watch-clients each view is instead what the page asks of the
server without a browser: for each of the page's five resources (nodes,
leases in kube-node-lease, pods, deployments, events) a paged list
(?limit=5000&continue=...) then a watch from the list's resourceVersion
(?watch=1&allowWatchBookmarks=true), streamed by `curl -N` into /dev/null
(20 chromium renderers parsing 5,000 nodes each do not fit on two shared
cores; the server's side of it does).

With --pods N, once the nodes registered, N pods are created before the
idle window, spread round-robin over the nodes with spec.nodeName already
set (the scheduler's work is skipped: binding 50,000 pods one by one does
not fit in a run), by --loaders processes each POSTing over its own
keep-alive HTTPS connection; the views then wait until they also count N
pods. The first view's JS heap (CDP Performance.getMetrics) is reported.
A watchdog kills the run when the machine's available memory falls below
--min-free-mb.

With --churn R (and --pods), while the first view's timer lag and the
views' CPU are measured, --loaders processes change R pods per second
between them (a merge PATCH of an annotation on load-<i>, round-robin: a
MODIFIED event per pod for every view; 1 % of 50,000 pods is 500/s); the
rate reached is reported.
"""

import argparse
import os
import sys
import tempfile
import shutil
import time
import json
import ssl
import subprocess
import urllib.parse
import urllib.request
import http.client
import multiprocessing
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdp  # noqa: E402
import browser_test as bt  # noqa: E402


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / tick


def measure(pid, seconds):
    c0, t0 = cpu_seconds(pid), time.time()
    time.sleep(seconds)
    return (cpu_seconds(pid) - c0) / (time.time() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kplane", required=True)
    ap.add_argument("--kpctl", required=True)
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--views", type=int, default=20)
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--store-port", type=int, default=2470)
    ap.add_argument("--watch-clients", action="store_true",
                    help="views as list+watch clients (curl), not chromium")
    ap.add_argument("--pods", type=int, default=0,
                    help="pods to create (spec.nodeName set) before measuring")
    ap.add_argument("--pods-settle", type=int, default=150,
                    help="seconds after the load to wait for the pods to run, at most")
    ap.add_argument("--loaders", type=int, default=4,
                    help="processes creating the pods in parallel")
    ap.add_argument("--churn", type=int, default=0,
                    help="pods changed per second while measuring the views (with --pods)")
    ap.add_argument("--min-free-mb", type=int, default=2000,
                    help="kill the run when MemAvailable falls below this")
    ap.add_argument("--probe", type=int, default=0,
                    help="every this many seconds, print the fleet's lease "
                         "renewal lag and the API server's lease PUT latency "
                         "over the last interval, and the NotReady nodes")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="kplane-ui-cpu-")
    kp = browser = None
    try:
        t = time.time()
        kp = bt.Kplane(args.kplane, args.store_port, 1, args.nodes, work, fast=False)
        print("kplane up with %d nodes in %.0f s" % (args.nodes, time.time() - t), flush=True)
        api = Api(kp)
        t = time.time()
        while api.count("/api/v1/nodes") < args.nodes:
            if time.time() - t > 240:
                print("not every node registered", file=sys.stderr)
                return 1
            time.sleep(2)
        print("%d nodes registered after %.0f s more" % (args.nodes, time.time() - t), flush=True)
        watchdog(kp, args.min_free_mb)
        if args.probe:
            Probe(api, args.probe)
        if args.pods:
            load_pods(kp, api, args)
        time.sleep(10)  # the fleet's registrations settle
        idle = measure(kp.proc.pid, args.seconds)
        print("no views: %.3f cores" % idle, flush=True)
        if args.views == 0:
            return 0
        if args.watch_clients:
            return watch_clients(kp, api, args, idle)
        browser = cdp.Browser(cdp.find_chromium())
        t_open = time.time()
        pages = []
        for i in range(args.views):
            ctx = browser_context(browser)
            page = ctx
            page.navigate(kp.api + "/ui/")
            page.eval("document.getElementById('token').value = %r; "
                      "document.getElementById('login-button').click(); true" % kp.token)
            pages.append(page)
        for page in pages:
            ok = page.wait(COUNT_IS % ("nodes", args.nodes), 60)
            if not ok:
                print("a view did not list all nodes", file=sys.stderr)
                return 1
        print("%d views open, each listing %d nodes, %.1f s after opening them"
              % (len(pages), args.nodes, time.time() - t_open), flush=True)
        if args.pods:
            # What the store holds, which the views must show (evictions
            # may have removed some of the created pods).
            pods_now = api.count("/api/v1/pods")
            if pods_now != args.pods:
                print("the API lists %d pods, not %d" % (pods_now, args.pods), flush=True)
            for page in pages:
                # In 50 s steps: the DevTools socket times out after 60 s.
                deadline = time.time() + 240
                while not page.wait(COUNT_IS % ("pods", pods_now), 50):
                    print("  %.0f s: %s" % (time.time() - t_open, page.eval(
                        "document.getElementById('node-counts').textContent")), flush=True)
                    if time.time() > deadline:
                        print("a view did not count all pods", file=sys.stderr)
                        return 1
            print("%d views open, each counting %d pods, %.1f s after opening them"
                  % (len(pages), pods_now, time.time() - t_open), flush=True)
            pages[0].eval("document.querySelector('[data-view=\"pods\"]') && "
                          "document.querySelector('[data-view=\"pods\"]').click(); true")
        churn = Churn(kp, api, args) if args.pods and args.churn else None
        # Responsiveness of the first page while its watches stream: how
        # late 50 ms timers fire on its main thread over 10 s (JSON of
        # watch events, renders and the once-a-second refresh share it).
        pages[0].call("Performance.enable")
        m0 = {m["name"]: m["value"] for m in pages[0].call("Performance.getMetrics")["metrics"]}
        t0 = time.time()
        lag = pages[0].eval(LAG_PROBE, await_promise=True)
        m1 = {m["name"]: m["value"] for m in pages[0].call("Performance.getMetrics")["metrics"]}
        print("page main-thread timer lag over 10 s: p50 %.0f ms, p99 %.0f ms, max %.0f ms"
              % (lag[0], lag[1], lag[2]), flush=True)
        print("page main thread busy %.0f %% of those 10 s (CDP TaskDuration)"
              % (100 * (m1["TaskDuration"] - m0["TaskDuration"]) / (time.time() - t0)), flush=True)
        print("page JS heap: %.1f MB used of %.1f MB" % js_heap_mb(pages[0]), flush=True)
        views = measure(kp.proc.pid, args.seconds)
        print("%d views: %.3f cores (+%.3f)" % (args.views, views, views - idle), flush=True)
        if churn:
            churn.stop()
        return 0
    finally:
        if browser:
            browser.close()
        if kp:
            kp.stop()
        shutil.rmtree(work, ignore_errors=True)


COUNT_IS = ("(() => { const b = document.querySelector('#node-counts [data-count=\"%s\"] b'); "
            "return !!b && b.textContent === '%d'; })()")


def js_heap_mb(page):
    page.call("Performance.enable")
    metrics = {m["name"]: m["value"] for m in page.call("Performance.getMetrics")["metrics"]}
    return metrics["JSHeapUsedSize"] / 1e6, metrics["JSHeapTotalSize"] / 1e6


def watchdog(kp, min_free_mb):
    """Kills kplane (and so ends the run) if the machine runs out of memory."""
    def run():
        while kp.proc.poll() is None:
            with open("/proc/meminfo") as f:
                avail = next(int(l.split()[1]) for l in f if l.startswith("MemAvailable:"))
            if avail < min_free_mb * 1024:
                print("watchdog: %d MB available, killing kplane" % (avail // 1024),
                      file=sys.stderr, flush=True)
                kp.proc.kill()
                return
            time.sleep(1)
    threading.Thread(target=run, daemon=True).start()


def histogram(text, name, labels=""):
    """{upper bound: cumulative count} of one histogram series."""
    out = {}
    for line in text.splitlines():
        if not line.startswith(name + "_bucket{") or labels not in line:
            continue
        le = line.split('le="', 1)[1].split('"', 1)[0]
        out[float("inf") if le == "+Inf" else float(le)] = float(line.rsplit(" ", 1)[1])
    return out


def quantile_bound(before, after, q):
    """The upper bound of the bucket holding quantile q of after - before;
    (bound, count). None when nothing was observed."""
    delta = {le: after[le] - before.get(le, 0) for le in after}
    total = delta.get(float("inf"), 0)
    if total <= 0:
        return None, 0
    for le in sorted(delta):
        if delta[le] >= q * total:
            return le, total
    return float("inf"), total


class Probe:
    """--probe: why nodes go NotReady under load. Every interval prints, over
    that interval: the fleet's lease renewals (completion minus due time:
    queueing in the simulated kubelets plus the API call) and the API
    server's own latency for lease PUTs (from reading the request to the
    answer), as p99 bucket bounds. (Listing the nodes to count the NotReady
    ones would load the server being measured; the events tell afterwards.)"""

    def __init__(self, api, interval):
        self.api, self.interval = api, interval
        threading.Thread(target=self.run, daemon=True).start()

    def scrape(self):
        req = urllib.request.Request(self.api.kp.api + "/metrics", headers={
            "Authorization": "Bearer " + self.api.kp.token})
        with urllib.request.urlopen(req, context=self.api.ctx, timeout=60) as r:
            text = r.read().decode()
        return (histogram(text, "kubeletsim_heartbeat_lag_seconds"),
                histogram(text, "apiserver_request_duration_seconds",
                          'verb="PUT",group="coordination.k8s.io",version="v1",resource="leases"'))

    def run(self):
        t0 = time.time()
        before = self.scrape()
        while True:
            time.sleep(self.interval)
            try:
                after = self.scrape()
                lag, n = quantile_bound(before[0], after[0], 0.99)
                put, m = quantile_bound(before[1], after[1], 0.99)
                print("probe %4.0f s: fleet renewals %d, lag p99 <= %s s; apiserver lease PUTs %d, p99 <= %s s"
                      % (time.time() - t0, n, lag, m, put), flush=True)
                before = after
            except Exception as e:  # a probe never stops the run
                print("probe: %s" % e, flush=True)


def load_pods(kp, api, args):
    t = time.time()
    work = [(kp.api, api.ca, kp.token, i, args.loaders, args.pods, args.nodes)
            for i in range(args.loaders)]
    with multiprocessing.Pool(args.loaders) as pool:
        failed = sum(pool.map(create_pods, work))
    made = api.count("/api/v1/pods")
    print("%d pods created (%d failed) in %.0f s: %.0f/s" % (
        made, failed, time.time() - t, made / (time.time() - t)), flush=True)
    if made < args.pods:
        raise RuntimeError("only %d pods" % made)
    t_loaded = time.time()
    # Let the fleet start them (bounded: it is CPU-bound on a shared machine).
    while True:
        by_phase = phases(api)
        if by_phase.get("Running", 0) >= args.pods or time.time() - t_loaded > args.pods_settle:
            break
        time.sleep(10)
    print("pods by phase %.0f s after the load began: %s" % (time.time() - t, by_phase), flush=True)
    events = api.get("/api/v1/events?fieldSelector=" + urllib.parse.quote(
        "reason=NodeNotReady,involvedObject.kind=Node"))["items"]
    print("NodeNotReady for nodes so far: %d events, %d nodes" % (
        sum(e.get("count", 1) for e in events),
        len({e["involvedObject"]["name"] for e in events})), flush=True)


def phases(api):
    """{phase: count} over every pod (paged list)."""
    by_phase, cont = {}, ""
    while True:
        body = api.get("/api/v1/pods?limit=5000" + ("&continue=" + urllib.parse.quote(cont) if cont else ""))
        for p in body["items"]:
            phase = p.get("status", {}).get("phase", "none")
            by_phase[phase] = by_phase.get(phase, 0) + 1
        cont = body["metadata"].get("continue", "")
        if not cont:
            return by_phase


def create_pods(work):
    """One loader: pods i, i+step, ... over one keep-alive connection."""
    base, ca, token, first, step, total, nodes = work
    url = urllib.parse.urlparse(base)
    ctx = ssl.create_default_context(cafile=ca)
    conn = http.client.HTTPSConnection(url.hostname, url.port, context=ctx, timeout=60)
    headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
    failed = 0
    for i in range(first, total, step):
        body = json.dumps({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "load-%d" % i, "namespace": "default",
                         "labels": {"app": "load"}},
            "spec": {"nodeName": "node-%d" % (i % nodes),
                     "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}})
        for attempt in range(3):
            try:
                conn.request("POST", "/api/v1/namespaces/default/pods", body, headers)
                r = conn.getresponse()
                r.read()
                if r.status in (201, 409):
                    break
                if attempt == 2:
                    failed += 1
                    print("pod %d: HTTP %d" % (i, r.status), file=sys.stderr)
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = http.client.HTTPSConnection(url.hostname, url.port, context=ctx, timeout=60)
                if attempt == 2:
                    failed += 1
    return failed


class Churn:
    """--loaders processes patching args.churn pods per second in all."""

    def __init__(self, kp, api, args):
        self.stop_event = multiprocessing.Event()
        self.done = multiprocessing.Value("i", 0)
        self.t0 = time.time()
        self.procs = [multiprocessing.Process(target=churn_pods, args=(
            (kp.api, api.ca, kp.token, i, args.loaders, args.pods, args.churn / args.loaders),
            self.stop_event, self.done), daemon=True) for i in range(args.loaders)]
        for p in self.procs:
            p.start()
        print("churn: %d pods/s asked" % args.churn, flush=True)

    def stop(self):
        self.stop_event.set()
        for p in self.procs:
            p.join()
        print("churn: %d pods changed in %.0f s: %.0f/s" % (
            self.done.value, time.time() - self.t0, self.done.value / (time.time() - self.t0)), flush=True)


def churn_pods(work, stop, done):
    base, ca, token, first, step, total, rate = work
    url = urllib.parse.urlparse(base)
    ctx = ssl.create_default_context(cafile=ca)
    conn = http.client.HTTPSConnection(url.hostname, url.port, context=ctx, timeout=60)
    headers = {"Authorization": "Bearer " + token,
               "Content-Type": "application/merge-patch+json"}
    i, n, t0 = first, 0, time.time()
    while not stop.is_set():
        body = json.dumps({"metadata": {"annotations": {"churn": str(n)}}})
        try:
            conn.request("PATCH", "/api/v1/namespaces/default/pods/load-%d" % i, body, headers)
            r = conn.getresponse()
            r.read()
            if r.status == 200:
                with done.get_lock():
                    done.value += 1
        except (OSError, http.client.HTTPException):
            conn.close()
            conn = http.client.HTTPSConnection(url.hostname, url.port, context=ctx, timeout=60)
        n += 1
        i = (i + step) % total
        ahead = t0 + n / rate - time.time()
        if ahead > 0:
            time.sleep(ahead)


LAG_PROBE = """new Promise(resolve => {
  const lags = [];
  const end = performance.now() + 10000;
  let due = performance.now() + 50;
  const tick = () => {
    const now = performance.now();
    lags.push(now - due);
    if (now > end) {
      lags.sort((a, b) => a - b);
      resolve([lags[Math.floor(lags.length / 2)], lags[Math.floor(lags.length * 0.99)], lags[lags.length - 1]]);
      return;
    }
    due = now + 50;
    setTimeout(tick, 50);
  };
  setTimeout(tick, 50);
})"""


class Api:
    """Requests to the API server with the ui token, trusting its CA."""

    def __init__(self, kp):
        self.kp = kp
        self.ca = os.path.join(kp.data, "pki", "ca.crt")
        self.ctx = ssl.create_default_context(cafile=self.ca)

    def get(self, path):
        req = urllib.request.Request(self.kp.api + path, headers={
            "Authorization": "Bearer " + self.kp.token, "Accept": "application/json"})
        with urllib.request.urlopen(req, context=self.ctx, timeout=120) as r:
            return json.load(r)

    def count(self, path):
        body = self.get(path + "?limit=1")
        return len(body["items"]) + int(body["metadata"].get("remainingItemCount", 0))

    def list_rv(self, path):
        """The page's paged list; returns its resourceVersion."""
        cont, rv = "", ""
        while True:
            body = self.get(path + "?limit=5000" + ("&continue=" + urllib.parse.quote(cont) if cont else ""))
            rv = body["metadata"]["resourceVersion"]
            cont = body["metadata"].get("continue", "")
            if not cont:
                return rv


PAGE_RESOURCES = ["/api/v1/nodes",
                  "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
                  "/api/v1/pods", "/apis/apps/v1/deployments", "/api/v1/events"]


def watch_clients(kp, api, args, idle):
    procs = []
    try:
        t = time.time()
        for _ in range(args.views):
            for path in PAGE_RESOURCES:
                rv = api.list_rv(path)
                procs.append(subprocess.Popen(
                    ["curl", "-sN", "--cacert", api.ca, "-H", "Authorization: Bearer " + kp.token,
                     "-o", "/dev/null",
                     kp.api + path + "?watch=1&allowWatchBookmarks=true&resourceVersion=" + rv]))
        print("%d views listed and watching (%d watches) after %.1f s"
              % (args.views, len(procs), time.time() - t), flush=True)
        time.sleep(5)
        alive = sum(p.poll() is None for p in procs)
        views = measure(kp.proc.pid, args.seconds)
        print("%d views: %.3f cores (+%.3f); %d of %d watches open after the window"
              % (args.views, views, views - idle, sum(p.poll() is None for p in procs), alive),
              flush=True)
        return 0
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            p.wait()


def browser_context(browser):
    """A page in a new browser context: its own cookies and connections."""
    ws = cdp.Page.__new__(cdp.Page)
    # Create the context and target through the browser's endpoint.
    with urllib.request.urlopen(browser.http + "/json/version", timeout=10) as r:
        browser_ws = json.load(r)["webSocketDebuggerUrl"]
    import websocket
    b = websocket.create_connection(browser_ws, timeout=60, suppress_origin=True)
    b.send(json.dumps({"id": 1, "method": "Target.createBrowserContext", "params": {}}))
    ctx_id = next(m for m in iter(lambda: json.loads(b.recv()), None) if m.get("id") == 1)["result"]["browserContextId"]
    b.send(json.dumps({"id": 2, "method": "Target.createTarget",
                       "params": {"url": "about:blank", "browserContextId": ctx_id}}))
    target = next(m for m in iter(lambda: json.loads(b.recv()), None) if m.get("id") == 2)["result"]["targetId"]
    browser.keep = getattr(browser, "keep", []) + [b]
    host = browser.http[len("http://"):]
    return cdp.Page("ws://%s/devtools/page/%s" % (host, target), browser.width, browser.height)


if __name__ == "__main__":
    sys.exit(main())
