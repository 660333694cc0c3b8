#!/usr/bin/python3
"""The web view in a real browser (issue 21): headless chromium against
`kplane up --store-nodes 3`, driven over the DevTools protocol.

  browser_test.py --kplane build/kplane --kpctl build/cmd/kpctl/kpctl \
      --store-port 2460 [--screenshots docs/images]

Signs in with the admin token `kplane up` wrote, then asserts in the DOM:
the nodes are listed Ready; a simulated node stopped with the page's own
button turns NotReady within the grace period (+ the node monitor period +
1 s) and Ready after its resume button; a rolling update moves the pods to
the new ReplicaSet; the deployment's history shows its versions from the
store with the image change in the diff; events arrive; killing the store's
leader shows another leader. Screenshots are saved.
Exits 77 (ctest's skip) when chromium is not installed.
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdp  # noqa: E402

DEBUG_JS = "document.querySelector('main').innerText.slice(0, 1500)"
GRACE = 6          # --node-monitor-grace-period
MONITOR = 1        # --node-monitor-period


def log(*a):
    print("[%s]" % time.strftime("%H:%M:%S"), *a, flush=True)


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)
    log("ok:", what)


class Kplane:
    def __init__(self, kplane, store_port, store_nodes, nodes, workdir,
                 fast=True):
        self.dir = workdir
        self.kubeconfig = os.path.join(workdir, "kubeconfig")
        self.data = os.path.join(workdir, "data")
        self.store_port = store_port
        self.log_path = os.path.join(workdir, "kplane-up.log")
        self.log_file = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [kplane, "up", "--data-dir", self.data, "--kubeconfig-out",
             self.kubeconfig, "--port", "0", "--store-port", str(store_port),
             "--store-nodes", str(store_nodes), "--nodes", str(nodes),
             "--kubeletsim-port", "0", "--controller-manager-port", "0"] +
            (["--lease-renew-interval", "1s", "--node-monitor-grace-period",
              "%ds" % GRACE, "--node-monitor-period", "%ds" % MONITOR,
              "--pod-eviction-timeout", "300s"] if fast else []),
            stdout=subprocess.PIPE, stderr=self.log_file, text=True)
        self.api = self.sim = None
        summary = []
        deadline = time.time() + 300
        for line in self.proc.stdout:
            summary.append(line)
            m = re.search(r"API server:\s+(\S+)", line)
            if m:
                self.api = m.group(1)
            m = re.search(r"control (https?://\S+)", line)
            if m:
                self.sim = m.group(1)
            if line.startswith("Ctrl-C") or time.time() > deadline:
                break
        if not self.api:
            self.stop()
            raise Failure("kplane up did not start:\n" + "".join(summary) +
                          open(self.log_path).read()[-3000:])
        self.summary = "".join(summary)
        import threading
        threading.Thread(target=lambda: [None for _ in self.proc.stdout],
                         daemon=True).start()
        with open(os.path.join(self.data, "ui-token")) as f:
            self.token = f.read().strip()

    def kubectl(self, *args):
        return subprocess.run(["kubectl", "--kubeconfig", self.kubeconfig] +
                              list(args), check=True, capture_output=True,
                              text=True, timeout=60).stdout

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log_file.close()


def sign_in(page, token):
    page.eval("document.getElementById('token').value = %r; "
              "document.getElementById('login-button').click(); true" % token)
    check(page.wait("/signed in as/.test(document.getElementById('who').textContent)"
                    " && document.getElementById('who').textContent", 15),
          "signed in")


def node_status(name):
    return ("(() => { const r = document.querySelector('#node-list .row[data-name=\"%s\"]:not([hidden])');"
            " return r ? r.querySelector('.status').textContent : ''; })()" % name)


def tab(page, view):
    page.eval("document.querySelector('#tabs button[data-view=\"%s\"]').click(); true" % view)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kplane", required=True)
    ap.add_argument("--kpctl", required=True)
    ap.add_argument("--store-port", type=int, default=2460)
    ap.add_argument("--screenshots", default="")
    ap.add_argument("--keep", action="store_true", help="keep the work dir")
    args = ap.parse_args()

    chromium = cdp.find_chromium()
    if chromium is None:
        print("SKIP: chromium is not installed (scripts/install-deps.sh installs it)")
        return 77
    shots = args.screenshots or tempfile.mkdtemp(prefix="kplane-ui-shots-")
    os.makedirs(shots, exist_ok=True)
    work = tempfile.mkdtemp(prefix="kplane-ui-test-")
    kp = browser = None
    try:
        log("starting kplane up --store-nodes 3 in", work)
        kp = Kplane(args.kplane, args.store_port, 3, 3, work)
        log("API", kp.api, "nodes' control", kp.sim)
        check("web view:" in kp.summary and "/ui/" in kp.summary,
              "kplane up prints the web view's URL")
        browser = cdp.Browser(chromium)
        page = browser.new_page()

        # A wrong token is refused and the page asks again.
        page.navigate(kp.api + "/ui/")
        check(page.wait("!document.getElementById('login').hidden", 10),
              "the page asks for a token")
        page.eval("document.getElementById('token').value = 'not-a-token'; "
                  "document.getElementById('login-button').click(); true")
        check(page.wait("/401/.test(document.getElementById('login-error').textContent)", 10),
              "a wrong token is refused (401) and the page asks again")

        sign_in(page, kp.token)
        for n in ("node-0", "node-1", "node-2"):
            check(page.wait(node_status(n) + " === 'Ready'", 30), n + " listed Ready")
        check(page.wait("/ago$/.test(document.querySelector('#node-list .row[data-name=\"node-1\"] .lease').textContent)", 10),
              "node-1's lease age is shown")
        # The page learns each lease's renewal interval from two renewals
        # (before that it assumes a kubelet's 10 s).
        check(page.wait("document.querySelector('#node-list .row[data-name=\"node-1\"] .lease').title === 'renewed every 1s'", 10),
              "node-1's lease renewal interval (1 s) is learned")
        page.screenshot(os.path.join(shots, "ui-nodes.png"))

        # A node stopped from the page (its stop button: the API server
        # proxies to the fleet's control endpoint) goes stale, then
        # NotReady; its resume button brings it back.
        node_button = ("document.querySelector('#node-list .row[data-name=\"node-1\"] "
                       "button[data-action=\"%s\"]').click(); true")
        page.eval(node_button % "stop")
        t0 = time.time()
        check(page.wait("/node-1: stopped/.test(document.getElementById('node-action').textContent)", 10),
              "the page's stop button stopped node-1 (%s)"
              % page.eval("document.getElementById('node-action').textContent"))
        limit = GRACE + MONITOR + 1
        got = page.wait(node_status("node-1") + ".startsWith('NotReady') || "
                        + node_status("node-1") + ".startsWith('Unknown')", limit + 10)
        took = time.time() - t0
        log("node-1 shown %s %.1f s after the stop" % (got, took))
        check(got and took <= limit,
              "node-1 turns NotReady in the DOM within grace %ds + monitor %ds + 1 s (took %.1f s)"
              % (GRACE, MONITOR, took))
        check(page.wait("document.querySelector('#node-list .row[data-name=\"node-1\"] .lease').classList.contains('s-stale')", 5),
              "node-1's lease is shown stale")
        check(page.wait("document.querySelector('[data-count=\"NotReady\"] b').textContent === '1'", 5),
              "the NotReady count is 1")
        page.screenshot(os.path.join(shots, "ui-node-notready.png"))
        page.eval(node_button % "resume")
        check(page.wait("/node-1: resumed/.test(document.getElementById('node-action').textContent)", 10),
              "the page's resume button resumed node-1")
        check(page.wait(node_status("node-1") + " === 'Ready'", 30), "node-1 Ready again after resume")
        sim_nodes = subprocess.run([args.kpctl, "sim", "--kubeconfig", kp.kubeconfig,
                                    "--endpoint", kp.sim, "list"], check=True,
                                   capture_output=True, text=True, timeout=30).stdout
        log("kpctl sim list after the resume:\n" + sim_nodes)

        # A rolling update moves the pods from the old ReplicaSet to the new.
        kp.kubectl("create", "deployment", "web", "--image=nginx:1.25", "--replicas=3")
        tab(page, "pods")
        owners_running = ("(() => { const rows = [...document.querySelectorAll('#pod-list .row:not([hidden])')]"
                          ".filter(r => r.dataset.name.startsWith('default/web-'));"
                          " if (rows.length !== 3 || !rows.every(r => r.querySelector('.phase').textContent === 'Running')) return '';"
                          " const o = new Set(rows.map(r => r.querySelector('.owner').textContent));"
                          " return o.size === 1 ? [...o][0] : ''; })()")
        old_rs = page.wait(owners_running, 60)
        check(old_rs, "3 Running pods of ReplicaSet %s shown with their nodes" % old_rs)
        old_pods = page.eval("[...document.querySelectorAll('#pod-list .row:not([hidden])')].map(r => r.dataset.name).filter(n => n.startsWith('default/web-'))")
        kp.kubectl("set", "image", "deployment/web", "nginx=nginx:1.26")
        new_rs = page.wait("(() => { const o = %s; return o && o !== %r ? o : ''; })()" % (owners_running, old_rs), 90)
        check(new_rs, "after the rolling update the 3 Running pods belong to %s" % new_rs)
        new_pods = page.eval("[...document.querySelectorAll('#pod-list .row:not([hidden])')].map(r => r.dataset.name).filter(n => n.startsWith('default/web-'))")
        check(not set(old_pods) & set(new_pods), "the pods moved: none of %s remains" % old_pods)
        page.screenshot(os.path.join(shots, "ui-pods.png"))
        tab(page, "deployments")
        check(page.wait("(() => { const r = document.querySelector('#deploy-list .row[data-name=\"default/web\"]');"
                        " return r && r.querySelector('.rollout').textContent === 'complete' && r.querySelector('.updated').textContent === '3'; })()", 30),
              "the deployment's rollout shows complete with 3 updated")
        page.screenshot(os.path.join(shots, "ui-deployments.png"))

        # The deployment's history from the store's MVCC: its versions,
        # newest first, the image change in a diff line.
        page.eval("document.querySelector('#deploy-list .row[data-name=\"default/web\"] "
                  "button[data-action=\"history\"]').click(); true")
        check(page.wait("!document.getElementById('view-history').hidden && "
                        "document.querySelectorAll('#history-versions .version').length >= 3", 20),
              "the deployment's history lists %s versions"
              % page.eval("document.querySelectorAll('#history-versions .version').length"))
        check(page.eval("(() => { const r = [...document.querySelectorAll('#history-versions .version')]"
                        ".map(v => +v.dataset.revision); return r.every((x, i) => i === 0 || r[i - 1] > x); })()"),
              "the versions are newest first by revision")
        check(page.eval("/every version since its creation/.test(document.getElementById('history-end').textContent)"),
              "the history goes back to the creation: %s"
              % page.eval("document.getElementById('history-end').textContent"))
        check(page.eval("[...document.querySelectorAll('#history-versions .diff .add')].some(d => /nginx:1\\.26/.test(d.textContent))"
                        " && [...document.querySelectorAll('#history-versions .diff .del')].some(d => /nginx:1\\.25/.test(d.textContent))"),
              "a diff shows the image change nginx:1.25 -> nginx:1.26")
        page.eval("[...document.querySelectorAll('#history-versions .diff .add')]"
                  ".find(d => /nginx:1\\.26/.test(d.textContent)).scrollIntoView({block: 'center'}); true")
        page.screenshot(os.path.join(shots, "ui-history.png"))

        # kplane's controllers record no Events yet; one written through the
        # API must appear while the page watches.
        tab(page, "events")
        subprocess.run(["kubectl", "--kubeconfig", kp.kubeconfig, "create", "-f", "-"],
                       input='{"apiVersion":"v1","kind":"Event","metadata":{"name":"web-ui-test","namespace":"default"},'
                             '"involvedObject":{"kind":"Deployment","namespace":"default","name":"web"},'
                             '"reason":"UiTestRollout","message":"rolled out nginx:1.26","type":"Normal",'
                             '"lastTimestamp":"%s"}' % time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                       check=True, capture_output=True, text=True, timeout=30)
        check(page.wait("[...document.querySelectorAll('#event-list .row:not([hidden])')].some(r => /UiTestRollout/.test(r.textContent))", 20),
              "an Event created through the API arrives in the page")
        page.screenshot(os.path.join(shots, "ui-events.png"))

        # The store: three members, one leader; kill it, another shows.
        tab(page, "store")
        leader_row = ("(() => { const r = [...document.querySelectorAll('#store-members tbody tr')];"
                      " const l = r.filter(x => x.querySelector('.role') && x.querySelector('.role').textContent === 'leader');"
                      " return r.length === 3 && l.length === 1 ? l[0].dataset.endpoint : ''; })()")
        old_leader = page.wait(leader_row, 20)
        check(old_leader, "the store panel lists 3 members with leader %s" % old_leader)
        page.screenshot(os.path.join(shots, "ui-store.png"))
        offset = int(old_leader.rsplit(":", 1)[1]) - args.store_port
        member = {0: "s1", 20000: "s2", 30000: "s3"}[offset]
        with open(os.path.join(kp.data, member + ".pid")) as f:
            pid = int(f.read().strip())
        log("killing the store leader", member, "pid", pid)
        os.kill(pid, signal.SIGKILL)
        new_leader = page.wait("(() => { const l = %s; return l && l !== %r ? l : ''; })()" % (leader_row, old_leader), 30)
        check(new_leader, "a new leader shows: %s (was %s)" % (new_leader, old_leader))
        page.screenshot(os.path.join(shots, "ui-store-new-leader.png"))
        if page.exceptions:
            log("page exceptions:", page.exceptions)
        check(not page.exceptions, "no uncaught exceptions in the page")
        log("PASS; screenshots in", shots)
        return 0
    except Failure as e:
        log("FAIL:", e)
        try:
            log("debug:", page.eval(DEBUG_JS) if os.environ.get("KPLANE_UI_DEBUG_JS") is None else page.eval(os.environ["KPLANE_UI_DEBUG_JS"]))
        except Exception as d:  # noqa: BLE001
            log("debug failed:", d)
        if kp:
            log("kplane up's log tail:\n" + open(kp.log_path).read()[-2000:])
        return 1
    finally:
        if browser:
            browser.close()
        if kp:
            kp.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
