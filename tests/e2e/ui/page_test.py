#!/usr/bin/python3
"""The web view's pod bookkeeping in a real browser, against a fake API.

  page_test.py --ui-dir ui                  # the test (ctest e2e_ui_page_test)
  page_test.py --ui-dir ui --measure        # 50,000 pods, 1 % changing per s

Serves the page's files (ui/) from a local HTTP server and replaces the
page's fetch with tests/e2e/ui/fake_api.js before app.js runs (CDP
Page.addScriptToEvaluateOnNewDocument), so the page lists and watches
generated nodes, leases and pods with no kplane at all: the page's own CPU,
nothing else.

The test (3,000 pods on 50 nodes) sends phase changes, then additions,
deletions, moves to other nodes, deletions in progress and owner changes
through the pods' watch, and after each batch compares what the page shows
with what the fake server holds: the Pods tab's order and phase counts, the
visible rows' phases, a node filter, a name filter, the Nodes tab's pods
per node and the Deployments' pods per ReplicaSet; then the History tab
with a deleted object's answer (deletedRevision) says when it was deleted. Phase changes must not
re-sort the pods (uiStats.podSorts stays at the one sort after the list):
the page used to rebuild and sort every pod once per animation frame
(docs/ui.md "Performance").

--measure: 50,000 pods on 5,000 nodes; with 500 pod phase changes and 500
lease renewals per second streaming (1 % of the pods per second, the
leases at kube's 10 s), how late 50 ms timers fire on the page's main
thread over 10 s on the chosen tab (--tab), its main-thread busy share
(CDP Performance.getMetrics TaskDuration) and the functions the sampling
profiler (CDP Profiler) saw most.
Exits 77 (ctest's skip) when chromium is not installed.
"""

import argparse
import functools
import http.server
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdp  # noqa: E402
from measure_cpu import LAG_PROBE  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def log(*a):
    print("[%s]" % time.strftime("%H:%M:%S"), *a, flush=True)


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)
    log("ok:", what)


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a):
        pass


def serve(directory):
    handler = functools.partial(QuietHandler, directory=directory)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


# What the page shows against what the fake server holds; "ok" or the first
# difference. Runs inside the page (its globals: pods, podList, $ ...).
CHECK_JS = r"""(() => {
  const truth = fakeApi.truth().map(([name, p]) => Object.assign({ key: 'default/' + name }, p));
  const order = (a, b) => a.node < b.node ? -1 : a.node > b.node ? 1 : a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
  truth.sort(order);
  const node = $('pod-node').value, filter = $('pod-filter').value.trim();
  const want = truth.filter(p => (!node || p.node === node) && (!filter || p.key.includes(filter)));
  const got = podList.items;
  if (got.length !== want.length) return 'rows: ' + got.length + ' shown, ' + want.length + ' expected';
  for (let i = 0; i < want.length; i++) {
    if (got[i].key !== want[i].key || got[i].node !== want[i].node) return 'row ' + i + ': ' + got[i].key + ' on ' + got[i].node + ', expected ' + want[i].key + ' on ' + want[i].node;
    const phase = want[i].deleting ? 'Terminating' : want[i].phase;
    const gotPhase = got[i].deleting ? 'Terminating' : got[i].phase;
    if (gotPhase !== phase) return want[i].key + ': ' + gotPhase + ', expected ' + phase;
  }
  for (const row of document.querySelectorAll('#pod-list .row:not([hidden])')) {
    const p = truth.find(t => t.key === row.dataset.name);
    const phase = p.deleting ? 'Terminating' : p.phase;
    if (row.children[2].textContent !== phase) return 'row ' + row.dataset.name + ' shows ' + row.children[2].textContent + ', expected ' + phase;
  }
  const phases = {};
  for (const p of truth) { const ph = p.deleting ? 'Terminating' : p.phase; phases[ph] = (phases[ph] || 0) + 1; }
  const shown = {};
  for (const c of document.querySelectorAll('#pod-counts .count')) shown[c.dataset.count] = Number(c.querySelector('b').textContent);
  if (shown.pods !== truth.length) return 'pods count ' + shown.pods + ', expected ' + truth.length;
  for (const ph of new Set([...Object.keys(phases), ...Object.keys(shown)])) {
    if (ph === 'pods' || ph === 'shown') continue;
    if (shown[ph] !== phases[ph]) return ph + ' count ' + shown[ph] + ', expected ' + phases[ph];
  }
  if ((node || filter) && shown.shown !== want.length) return 'shown ' + shown.shown + ', expected ' + want.length;
  const perNode = new Map(), perRs = new Map();
  for (const p of truth) {
    perNode.set(p.node, (perNode.get(p.node) || 0) + 1);
    if (p.owner && !p.deleting) perRs.set('default/' + p.owner, (perRs.get('default/' + p.owner) || 0) + 1);
  }
  for (const n of nodes.items.keys()) {
    if ((podIndex.byNode.get(n) || 0) !== (perNode.get(n) || 0)) return n + ': ' + podIndex.byNode.get(n) + ' pods, expected ' + perNode.get(n);
  }
  if (podIndex.byRs.size !== perRs.size) return podIndex.byRs.size + ' replicasets, expected ' + perRs.size;
  for (const [rs, n] of perRs) if (podIndex.byRs.get(rs) !== n) return rs + ': ' + podIndex.byRs.get(rs) + ' pods, expected ' + n;
  return 'ok';
})()"""

SIGN_IN = ("document.getElementById('token').value = 'fake'; "
           "document.getElementById('login-button').click(); true")
SYNCED = ("typeof pods !== 'undefined' && pods && pods.synced && nodes.synced && leases.synced && "
          "fakeApi.watching('/api/v1/pods') > 0 && fakeApi.watching('/api/v1/nodes') > 0")


# Resolves after the page rendered a frame (its renders run in animation frames).
FRAME = "new Promise(r => requestAnimationFrame(() => setTimeout(() => r(true), 0)))"


def tab(page, view):
    page.eval("document.querySelector('#tabs button[data-view=\"%s\"]').click(); true" % view)


def wait_consistent(page, what):
    got = page.wait("(%s) === 'ok'" % CHECK_JS, 10)
    if not got:
        raise Failure("%s: %s" % (what, page.eval(CHECK_JS)))
    log("ok:", what, "(the page matches the server)")


def run_test(page):
    check(page.eval("uiStats.podSorts") == 1, "one sort of the pods, after the list")
    tab(page, "pods")
    wait_consistent(page, "3,000 pods listed")

    # Phase changes only: updated in place, no sort.
    page.eval("""fakeApi.apply(Array.from({ length: 400 }, (_, k) =>
      ({ type: 'MODIFIED', name: 'load-' + (k * 7), phase: k % 3 ? 'Succeeded' : 'Failed' }))); true""")
    wait_consistent(page, "400 phase changes")
    # The first rows are on screen: a visible pod's change reaches its row.
    page.eval("fakeApi.apply([{ type: 'MODIFIED', name: podList.items[0].key.slice(8), phase: 'Unknown' }]); true")
    wait_consistent(page, "a visible pod turns Unknown")
    stats = page.eval("uiStats")
    check(stats["podSorts"] == 1 and stats["podInPlace"] >= 401 and stats["podSplices"] == 0,
          "phase changes re-sorted nothing (%s)" % stats)

    # Pods come, go, move, start terminating, get owners.
    page.eval("""(() => {
      const ch = [];
      for (let k = 0; k < 300; k++) ch.push({ type: 'ADDED', name: 'new-' + k, node: 'node-' + (k % 53), phase: 'Pending', owner: k % 2 ? 'web-abc12' : '' });
      for (let k = 0; k < 200; k++) ch.push({ type: 'DELETED', name: 'load-' + (k * 13) });
      for (let k = 0; k < 200; k++) ch.push({ type: 'MODIFIED', name: 'load-' + (k * 11 + 1), node: 'node-' + ((k * 17) % 50) });
      for (let k = 0; k < 100; k++) ch.push({ type: 'MODIFIED', name: 'new-' + (k * 3), deleting: true });
      for (let k = 0; k < 100; k++) ch.push({ type: 'MODIFIED', name: 'load-' + (k * 5 + 2), owner: 'api-def34' });
      ch.push({ type: 'DELETED', name: 'not-there' });
      fakeApi.apply(ch);
      return true;
    })()""")
    wait_consistent(page, "300 added, 200 deleted, 200 moved, 100 terminating, 100 owned")

    page.eval("$('pod-node').value = 'node-7'; $('pod-node').dispatchEvent(new Event('change')); true")
    wait_consistent(page, "the pods of node-7")
    page.eval("fakeApi.apply([{ type: 'ADDED', name: 'late-1', node: 'node-7' }, "
              "{ type: 'MODIFIED', name: 'load-57', node: 'node-8' }]); true")
    wait_consistent(page, "node-7's pods after one came and one left")
    page.eval("$('pod-filter').value = 'load-1'; $('pod-filter').dispatchEvent(new Event('input')); true")
    wait_consistent(page, "node-7's pods named load-1*")
    page.eval("$('pod-node').value = ''; $('pod-node').dispatchEvent(new Event('change')); true")
    wait_consistent(page, "every node's pods named load-1*")
    page.eval("$('pod-filter').value = ''; $('pod-filter').dispatchEvent(new Event('input')); true")
    wait_consistent(page, "all pods again")

    # Node status changes re-sort no node names (the Pods tab's node filter,
    # the Nodes tab's list). Both sorted lists are made first: the Nodes tab
    # may not have rendered yet on a loaded machine, and its first sort then
    # landed after the count below (stop 36's run: 2 sorts before, 3 after).
    tab(page, "nodes")
    page.eval(FRAME, await_promise=True)
    tab(page, "pods")
    page.eval(FRAME, await_promise=True)
    sorts = page.eval("uiStats.nodeSorts")
    page.eval("fakeApi.nodes([['node-3', false], ['node-4', false]]); true")
    check(page.wait("nodes.items.get('node-3').ready === 'False' && nodes.items.get('node-4').ready === 'False'", 10),
          "node-3 and node-4 turn NotReady")
    page.eval(FRAME, await_promise=True)
    page.eval("fakeApi.nodes([['node-3', true]]); true")
    check(page.wait("nodes.items.get('node-3').ready === 'True'", 10), "node-3 Ready again")
    page.eval(FRAME, await_promise=True)
    tab(page, "nodes")
    check(page.wait("(() => { const r = document.querySelector('#node-list .row[data-name=\"node-4\"]'); "
                    "return !!r && r.children[1].textContent === 'NotReady'; })()", 10),
          "node-4's row shows NotReady")
    check(page.eval("uiStats.nodeSorts") == sorts,
          "node status changes sorted no names again (%d sorts before, %d after)"
          % (sorts, page.eval("uiStats.nodeSorts")))
    got = page.wait("""(() => {
      const rows = [...document.querySelectorAll('#node-list .row:not([hidden])')];
      const per = new Map();
      for (const [, p] of fakeApi.truth()) per.set(p.node, (per.get(p.node) || 0) + 1);
      return rows.length > 10 && rows.every(r => r.children[3].textContent === String(per.get(r.dataset.name) || 0));
    })()""", 10)
    check(got, "the Nodes tab's pods per node match the server")
    check(page.eval("uiStats.podSorts") == 1, "still the one sort after the list (%s)" % page.eval("uiStats"))

    # A deleted object's history (/ui/api/history with deletedRevision).
    page.eval("""fakeApi.history = { key: '/registry/configmaps/default/cm', createRevision: 10, readRevision: 50,
      deletedRevision: 42, end: 'created', versions: [
        { revision: 41, version: 2, object: { kind: 'ConfigMap', metadata: { name: 'cm', namespace: 'default' }, data: { v: '2' } } },
        { revision: 10, version: 1, object: { kind: 'ConfigMap', metadata: { name: 'cm', namespace: 'default' }, data: { v: '1' } } }] };
      openHistory({ group: '', version: 'v1', resource: 'configmaps', namespace: 'default', name: 'cm' }); true""")
    got = page.wait("""(() => {
      const d = document.querySelector('#history-summary [data-count="deleted at revision"] b');
      return !!d && d.textContent === '42' && document.querySelectorAll('#history-versions .version').length === 2 &&
        /was deleted at revision 42/.test($('history-end').textContent) &&
        /every version since its creation/.test($('history-end').textContent);
    })()""", 10)
    check(got, "a deleted object's history says when it was deleted (%s)" % page.eval("$('history-end').textContent"))
    check(not page.exceptions, "no exception in the page (%s)" % page.exceptions[:2])


def run_measure(page, args, t_open):
    log("listed %d nodes and %d pods %.1f s after signing in" % (args.nodes, args.pods, time.time() - t_open))
    tab(page, args.tab)
    page.call("Performance.enable")
    page.call("Profiler.enable")
    page.call("Profiler.setSamplingInterval", interval=1000)
    page.eval("window.stopChurn = fakeApi.churn(%d, %d, %d); true" % (args.churn, args.nodes // 10, args.node_churn))
    time.sleep(2)  # the first events arrive
    page.call("Profiler.start")
    m0 = {m["name"]: m["value"] for m in page.call("Performance.getMetrics")["metrics"]}
    t0 = time.time()
    lag = page.eval(LAG_PROBE, await_promise=True)
    m1 = {m["name"]: m["value"] for m in page.call("Performance.getMetrics")["metrics"]}
    wall = time.time() - t0
    profile = page.call("Profiler.stop")["profile"]
    page.eval("stopChurn(); true")
    log("%s tab, %d pods on %d nodes, %d pod changes/s, %d lease renewals/s, %d node changes/s:" % (
        args.tab, args.pods, args.nodes, args.churn, args.nodes // 10, args.node_churn))
    log("main-thread timer lag over 10 s: p50 %.0f ms, p99 %.0f ms, max %.0f ms" % tuple(lag))
    log("main thread busy %.0f %% of the window (tasks %.2f s, script %.2f s, layout %.2f s, style %.2f s in %.1f s)" % (
        100 * (m1["TaskDuration"] - m0["TaskDuration"]) / wall, m1["TaskDuration"] - m0["TaskDuration"],
        m1["ScriptDuration"] - m0["ScriptDuration"], m1["LayoutDuration"] - m0["LayoutDuration"],
        m1["RecalcStyleDuration"] - m0["RecalcStyleDuration"], wall))
    log("JS heap %.0f MB used" % (m1["JSHeapUsedSize"] / 1e6))
    # Self time per function from the sampling profile.
    dt = profile.get("timeDeltas", [])
    per_node = {}
    for sid, d in zip(profile.get("samples", []), dt[1:] + [0]):
        per_node[sid] = per_node.get(sid, 0) + d
    by_fn = {}
    for n in profile["nodes"]:
        cf = n["callFrame"]
        name = "%s %s:%d" % (cf["functionName"] or "(anonymous)", os.path.basename(cf["url"]) or "-", cf["lineNumber"] + 1)
        by_fn[name] = by_fn.get(name, 0) + per_node.get(n["id"], 0)
    total = sum(by_fn.values()) or 1
    log("profile, self time (%.1f s sampled):" % (total / 1e6))
    for name, us in sorted(by_fn.items(), key=lambda kv: -kv[1])[:args.top]:
        log("  %6.0f ms %4.1f %%  %s" % (us / 1e3, 100 * us / total, name))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ui-dir", default=os.path.join(HERE, "..", "..", "..", "ui"))
    ap.add_argument("--measure", action="store_true")
    ap.add_argument("--pods", type=int, default=None)
    ap.add_argument("--nodes", type=int, default=None)
    ap.add_argument("--churn", type=int, default=None, help="pod phase changes per second (--measure)")
    ap.add_argument("--node-churn", type=int, default=0, help="node status changes per second (--measure)")
    ap.add_argument("--tab", default="pods", help="the tab measured (--measure)")
    ap.add_argument("--top", type=int, default=12)
    args = ap.parse_args()
    if args.pods is None:
        args.pods = 50000 if args.measure else 3000
    if args.nodes is None:
        args.nodes = 5000 if args.measure else 50
    if args.churn is None:
        args.churn = args.pods // 100
    binary = cdp.find_chromium()
    if not binary:
        print("chromium not found: skipped", file=sys.stderr)
        return 77
    with open(os.path.join(HERE, "fake_api.js")) as f:
        fake = f.read().replace("__PODS__", str(args.pods)).replace("__NODES__", str(args.nodes))
    server = serve(os.path.abspath(args.ui_dir))
    browser = None
    try:
        browser = cdp.Browser(binary)
        page = browser.new_page()
        page.call("Page.addScriptToEvaluateOnNewDocument", source=fake)
        page.navigate("http://127.0.0.1:%d/index.html" % server.server_address[1])
        t_open = time.time()
        page.eval(SIGN_IN)
        if not page.wait(SYNCED, 55):
            raise Failure("the page did not list and watch (exceptions: %s)" % page.exceptions[:2])
        if args.measure:
            run_measure(page, args, t_open)
        else:
            run_test(page)
        log("PASS")
        return 0
    except Failure as e:
        log("FAIL:", e)
        return 1
    finally:
        if browser:
            browser.close()
        server.shutdown()


if __name__ == "__main__":
    sys.exit(main())
