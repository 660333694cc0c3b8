#!/usr/bin/env python3
"""Helpers of scripts/bench/fleet.sh that speak JSON (standard library only).

  fleet_probe.py nodes API_URL
      One LIST of /api/v1/nodes; prints "total=T ready=R notready=U": nodes,
      nodes whose Ready condition is True, and nodes whose Ready condition
      is anything else (False, Unknown, missing).

  fleet_probe.py lagsnap SIM_URL
      The fleet's /nodes table: every node's lag of its *last* lease renewal
      (one sample per node). Prints "n=N p50=S p99=S max=S" (seconds, exact
      order statistics, not histogram buckets).

  fleet_probe.py detect API_URL NODE READY_FILE TIMEOUT_S
      Watches Node NODE through the API server (fieldSelector
      metadata.name=NODE, from the resourceVersion of a GET), writes
      READY_FILE once the watch is open, and returns when an event shows its
      Ready condition not True (or after TIMEOUT_S). Then reads the node's
      Lease. Prints "notready_at=EPOCH status=S reason=R last_renew=EPOCH"
      (notready_at: when this process received the event; last_renew: the
      Lease's spec.renewTime), or "notready_at=none ..." on timeout.

  fleet_probe.py deploy API_URL NAMESPACE PODS PER_DEPLOYMENT
      Creates ceil(PODS / PER_DEPLOYMENT) Deployments fleet-pods-0, -1, ...
      in NAMESPACE with PODS replicas in total (PER_DEPLOYMENT each, the
      last one the rest): one container "app", image nginx:1.27, no
      resource requests (nothing for the scheduler to refuse). Prints
      "deployments=D pods=P"; the first refused POST ends it with exit 1
      and the API server's Status message.

  fleet_probe.py running API_URL NAMESPACE
      Counts the pods in NAMESPACE whose status.phase is Running, as the API
      server lists them (fieldSelector status.phase=Running, one consistent
      LIST from its watch cache, metadata only). Prints "running=R".

  fleet_probe.py table RESULTS_TSV
      fleet.sh's results.tsv as a Markdown table.
"""
import datetime
import json
import sys
import time
import urllib.error
import urllib.request


def get_json(url, timeout=120):
    req = urllib.request.Request(url, headers={"Accept": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.load(r)


def ready_status(node):
    for c in node.get("status", {}).get("conditions", []) or []:
        if c.get("type") == "Ready":
            return c.get("status", ""), c.get("reason", "")
    return "", ""


def parse_time(s):
    # RFC 3339 with optional fraction: 2026-11-29T17:30:00.123456Z
    if not s:
        return None
    s = s.rstrip("Z")
    fmt = "%Y-%m-%dT%H:%M:%S.%f" if "." in s else "%Y-%m-%dT%H:%M:%S"
    dt = datetime.datetime.strptime(s, fmt)
    return dt.replace(tzinfo=datetime.timezone.utc).timestamp()


def cmd_nodes(api):
    items = get_json(api + "/api/v1/nodes").get("items", []) or []
    ready = sum(1 for n in items if ready_status(n)[0] == "True")
    print(f"total={len(items)} ready={ready} notready={len(items) - ready}")


def quantile(sorted_vals, q):
    # Nearest rank: the smallest value with at least q of the samples <= it.
    if not sorted_vals:
        return float("nan")
    k = max(0, min(len(sorted_vals) - 1, int(-(-q * len(sorted_vals) // 1)) - 1))
    return sorted_vals[k]


def cmd_lagsnap(sim):
    nodes = get_json(sim + "/nodes").get("nodes", []) or []
    lags = sorted(float(n.get("lastLagSeconds", 0)) for n in nodes
                  if n.get("leaseRenewals", 0) > 0)
    if not lags:
        print("n=0 p50=nan p99=nan max=nan")
        return
    print(f"n={len(lags)} p50={quantile(lags, 0.5):.3f} "
          f"p99={quantile(lags, 0.99):.3f} max={lags[-1]:.3f}")


def cmd_detect(api, node, ready_file, timeout_s):
    deadline = time.time() + timeout_s
    # Watch from a LIST's revision (the cache's current one), as informers
    # do: the Node's own resourceVersion is its last change, which may be
    # older than the watch cache's history (75 s) and would answer 410.
    listed = get_json(f"{api}/api/v1/nodes?fieldSelector=metadata.name%3D{node}")
    rv = listed["metadata"]["resourceVersion"]
    url = (f"{api}/api/v1/nodes?watch=true&fieldSelector=metadata.name%3D{node}"
           f"&resourceVersion={rv}&timeoutSeconds={int(timeout_s) + 5}")
    req = urllib.request.Request(url, headers={"Accept": "application/json"})
    notready_at, status, reason = None, "", ""
    with urllib.request.urlopen(req, timeout=timeout_s + 10) as stream:
        with open(ready_file, "w") as f:
            f.write("watching\n")
        while time.time() < deadline:
            line = stream.readline()
            if not line:
                break
            line = line.strip()
            if not line:
                continue
            event = json.loads(line)
            if event.get("type") == "ERROR":
                msg = event.get("object", {}).get("message", "")
                print(f"detect: watch of {node} failed: {msg}", file=sys.stderr)
                break
            if event.get("type") not in ("ADDED", "MODIFIED"):
                continue
            status, reason = ready_status(event["object"])
            if status != "True":
                notready_at = time.time()
                break
    lease = get_json(f"{api}/apis/coordination.k8s.io/v1/namespaces/"
                     f"kube-node-lease/leases/{node}")
    renew = parse_time(lease.get("spec", {}).get("renewTime", ""))
    print(f"notready_at={'none' if notready_at is None else f'{notready_at:.3f}'}"
          f" status={status or '-'} reason={reason or '-'}"
          f" last_renew={'none' if renew is None else f'{renew:.3f}'}")


def api_error(e):
    """The Status message of an HTTPError (kube's error body), else its text."""
    body = e.read().decode("utf-8", "replace")
    try:
        return f"{e.code} {json.loads(body).get('message', body)}"
    except ValueError:
        return f"{e.code} {body.strip()}"


def cmd_deploy(api, ns, pods, per):
    if pods < 1 or per < 1:
        print("deploy: PODS and PER_DEPLOYMENT must be at least 1",
              file=sys.stderr)
        return 2
    made = 0
    left = pods
    while left > 0:
        replicas = min(per, left)
        name = f"fleet-pods-{made}"
        labels = {"app": name}
        body = {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "labels": {"app": "fleet-pods"}},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [
                        {"name": "app", "image": "nginx:1.27"}]},
                },
            },
        }
        req = urllib.request.Request(
            f"{api}/apis/apps/v1/namespaces/{ns}/deployments",
            data=json.dumps(body).encode(), method="POST",
            headers={"Content-Type": "application/json",
                     "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60):
                pass
        except urllib.error.HTTPError as e:
            print(f"deploy: creating deployment {ns}/{name}: {api_error(e)}",
                  file=sys.stderr)
            return 1
        except (urllib.error.URLError, OSError) as e:
            print(f"deploy: creating deployment {ns}/{name}: {e}",
                  file=sys.stderr)
            return 1
        made += 1
        left -= replicas
    print(f"deployments={made} pods={pods}")
    return 0


def cmd_running(api, ns):
    # No resourceVersion and no limit: a consistent read served from the
    # watch cache (docs/api.md, LIST); a limit would page through the store.
    url = (f"{api}/api/v1/namespaces/{ns}/pods"
           "?fieldSelector=status.phase%3DRunning")
    req = urllib.request.Request(url, headers={
        "Accept": "application/json;as=PartialObjectMetadataList;"
                  "g=meta.k8s.io;v=v1"})
    with urllib.request.urlopen(req, timeout=120) as r:
        items = json.load(r).get("items", []) or []
    print(f"running={len(items)}")
    return 0


def cmd_table(path):
    with open(path) as f:
        lines = [l.rstrip("\n").split("\t") for l in f if l.strip()]
    head, rows = lines[0], lines[1:]
    # The pod columns only when a row ran --pods: tables of runs without
    # pods (and results.tsv files from before --pods) look as they did.
    with_pods = any(dict(zip(head, v)).get("pods", "0") not in ("0", "-", "")
                    for v in rows)
    pod_head = ("| pods Running in (pods/s) | kubelet events written / dropped "
                "(in the window) "
                if with_pods else "")
    print("| N | fleet workers | registered in " + pod_head +
          "| lag p50 / p99 (histogram, ≤) | last-renewal lag "
          "p99 / max | on time | lease writes/s (due) | healthy nodes marked NotReady: since start / at window end "
          "| stopped node NotReady after: from stop / from last renewal "
          "(bound) | store members CPU % / RSS MB (* leader) | apiserver "
          "| controller manager | kubeletsim | load start → end | pass |")
    print("|" + "---|" * (17 if with_pods else 15))
    for values in rows:
        r = dict(zip(head, values))
        def ms(v):
            try:
                x = float(v)
            except ValueError:
                return v
            return f"{x * 1000:.0f} ms" if x < 1 else f"{x:g} s"
        stores = []
        for i in (1, 2, 3):
            c = r.get(f"cpu_store{i}", "-")
            if c == "-":
                continue
            star = "*" if r.get("leader") == str(i) else ""
            stores.append(f"{c} / {r[f'rss_store{i}']}{star}")
        store = ", ".join(stores) if stores else "(embedded in apiserver)"
        reg = f"{r['registered_s']} s"
        if r.get("note", "-") != "-":
            reg += f" ({r['note']})"
        pod_cells = ""
        if with_pods:
            if r.get("pods", "0") in ("0", "-", ""):
                pod_cells = "| - | - "
            else:
                pod_cells = (f"| {int(r['pods']):,} in {r['pods_running_s']} s "
                             f"({r['pods_per_s']}/s) "
                             f"| {r['pod_events']} / {r['pod_events_dropped']} "
                             f"({r.get('pod_events_window', '?')}) ")
        print(f"| {int(r['nodes']):,} | {r['workers']} | {reg} {pod_cells}"
              f"| {ms(r['lag_p50_le'])} / {ms(r['lag_p99_le'])} "
              f"| {ms(r['last_lag_p99'])} / {ms(r['last_lag_max'])} "
              f"| {r['on_time']} | {r['lease_wps']} ({r['lease_due_wps']}) "
              f"| {r.get('false_notready_events', '?')} / {r['false_notready']} "
              f"| {r['detect_from_stop_s']} s / {r['detect_from_renew_s']} s "
              f"({r['grace_s']} + {r['period_s']} = {r['bound_s']} s): "
              f"{r['detect_ok']} "
              f"| {store} | {r['cpu_api']} / {r['rss_api']} "
              f"| {r['cpu_cm']} / {r['rss_cm']} | {r['cpu_sim']} / {r['rss_sim']} "
              f"| {r['load_start']} → {r['load_end']} | {r['pass']} |")


def main(argv):
    if len(argv) >= 3 and argv[1] == "nodes":
        cmd_nodes(argv[2])
    elif len(argv) >= 3 and argv[1] == "lagsnap":
        cmd_lagsnap(argv[2])
    elif len(argv) >= 6 and argv[1] == "detect":
        cmd_detect(argv[2], argv[3], argv[4], float(argv[5]))
    elif len(argv) >= 6 and argv[1] == "deploy":
        try:
            return cmd_deploy(argv[2], argv[3], int(argv[4]), int(argv[5]))
        except ValueError:
            print("deploy: PODS and PER_DEPLOYMENT must be numbers",
                  file=sys.stderr)
            return 2
    elif len(argv) >= 4 and argv[1] == "running":
        return cmd_running(argv[2], argv[3])
    elif len(argv) >= 3 and argv[1] == "table":
        cmd_table(argv[2])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
