#!/usr/bin/env python3
"""Per-thread CPU and context switches per lease renewal of a fleet run.

docs/performance.md ("The fleet", "Per-renewal CPU in the store"): the
companion of renewal_cpu.py. Started next to scripts/bench/fleet.sh, it
waits for fleet.sh's "registered in" line, sleeps SETTLE + OFFSET seconds,
then over SPAN seconds samples, for the store members, the apiserver and
the kubeletsim of that kplane binary:
  - every thread's CPU ticks (utime + stime, /proc/<pid>/task/*/stat) and
    context switches (voluntary + involuntary, .../status), summed by
    thread name, divided by the fleet's lease writes in the same SPAN;
  - each member's raft Readies written with entries and the entries they
    held (kplane_raft_ready_entries: WAL fsyncs per renewal and entries
    per fsync) and whether it leads (etcd_server_is_leader).

  KPLANE=build-test/kplane KPCTL=build-test/cmd/kpctl/kpctl /work/bin/cpu \\
    scripts/bench/fleet.sh --nodes 4000 --settle 10 --window 60 ... 2>f.err &
  scripts/bench/renewal_threads.py --fleet-log f.err --kplane build-test/kplane

Threads whose names differ only in a trailing number (a pool: apiserver-w0
.. apiserver-w63) are summed as one (apiserver-w*); threads below 1 µs and
0.05 switches per renewal are left out.
"""
import collections
import os
import re
import sys
import time
import urllib.request

from renewal_cpu import wait_for_window, window_args  # same directory


def threads(pid):
    """({thread name: ticks}, {thread name: context switches})."""
    cpu, sw = collections.Counter(), collections.Counter()
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/stat") as f:
                st = f.read()
            # Numbered threads of one pool (apiserver-w0..w63) as one.
            comm = re.sub(r"\d+$", "*", st[st.index("(") + 1:st.rindex(")")])
            fields = st.rsplit(")", 1)[1].split()
            cpu[comm] += int(fields[11]) + int(fields[12])
            with open(f"/proc/{pid}/task/{t}/status") as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt", "nonvoluntary_ctxt")):
                        sw[comm] += int(line.split()[1])
        except (OSError, ValueError):
            pass  # a thread that ended meanwhile
    return cpu, sw


def metrics(url):
    with urllib.request.urlopen(url + "/metrics", timeout=5) as r:
        return r.read().decode()


def metric(body, name):
    m = re.search(r"^" + re.escape(name) + r"(?:\{[^}]*\})? (\S+)", body, re.M)
    return float(m.group(1)) if m else 0.0


def client_url(argv):
    return argv[argv.index("--listen-client-urls") + 1].split(",")[0]


def main():
    a = window_args()
    ps = wait_for_window(a)
    if "kubeletsim" not in ps:
        sys.exit("no kubeletsim of " + a.kplane)
    sim_argv = ps["kubeletsim"][1]
    sim = "http://127.0.0.1:" + sim_argv[sim_argv.index("--port") + 1]
    writes = 'kubeletsim_api_writes_total{operation="lease"}'
    stores = sorted(r for r in ps if r.startswith("store-"))

    def sample():
        return ({r: threads(ps[r][0]) for r in ps},
                {r: metrics(client_url(ps[r][1])) for r in stores},
                metric(metrics(sim), writes))

    t0, m0, w0 = sample()
    load = open("/proc/loadavg").read().split()[0]
    time.sleep(a.span)
    t1, m1, w1 = sample()
    n = max(w1 - w0, 1)
    hz = os.sysconf("SC_CLK_TCK")
    print(f"load {load}; {n:.0f} lease writes in {a.span:.0f} s ({n / a.span:.0f}/s)")
    for r in stores + ["apiserver", "controller-manager", "kubeletsim"]:
        if r not in ps:
            continue
        (c0, s0), (c1, s1) = t0[r], t1[r]
        cpu = sum(c1.values()) - sum(c0.values())
        sw = sum(s1.values()) - sum(s0.values())
        extra = ""
        if r in m1:
            rs = "kplane_raft_ready_entries_"
            fsyncs = metric(m1[r], rs + "count") - metric(m0[r], rs + "count")
            entries = metric(m1[r], rs + "sum") - metric(m0[r], rs + "sum")
            lead = metric(m1[r], "etcd_server_is_leader") == 1
            extra = (f"{' (leader)' if lead else ''}, {fsyncs / n:.2f} WAL fsyncs"
                     f" per renewal, {entries / max(fsyncs, 1):.2f} entries per fsync")
        print(f"{r}: {cpu / hz * 1e6 / n:.0f} µs and {sw / n:.2f} switches"
              f" per renewal{extra}")
        for comm in sorted(c1, key=lambda k: -(c1[k] - c0.get(k, 0))):
            d, ds = c1[comm] - c0.get(comm, 0), s1[comm] - s0.get(comm, 0)
            us = d / hz * 1e6 / n
            if us < 1 and ds / n < 0.05:
                continue
            print(f"    {comm:16s} {us:6.0f} µs {ds / n:6.2f} switches")


if __name__ == "__main__":
    main()
