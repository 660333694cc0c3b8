#!/usr/bin/env python3
"""CPU per lease renewal of every process of a scripts/bench/fleet.sh run.

docs/performance.md ("CPU per lease renewal"): the CPU ticks (utime +
stime, /proc/<pid>/stat) of each process over SPAN seconds, starting
OFFSET seconds into fleet.sh's window, divided by the fleet's lease writes
in the same SPAN (kubeletsim_api_writes_total{operation="lease"}).

Run it next to fleet.sh, reading the file fleet.sh's stderr goes to:

  KPLANE=build-test/kplane KPCTL=build-test/cmd/kpctl/kpctl \\
    scripts/bench/fleet.sh --nodes 2000 --settle 10 ... 2>/tmp/f.err &
  scripts/bench/renewal_cpu.py --fleet-log /tmp/f.err --settle 10 \\
    --kplane build-test/kplane

It waits for fleet.sh's "registered in" line (the window starts SETTLE
seconds later), finds the processes of that kplane binary (store members,
apiserver, controller-manager, kubeletsim) in /proc, samples, and prints
one line: microseconds of CPU per renewal per process and in total.
"""
import argparse
import os
import re
import sys
import time
import urllib.request

ROLES = ("store", "apiserver", "controller-manager", "kubeletsim")


def procs(binary):
    """{role or store name: (pid, argv)} for processes of `binary`."""
    found = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                argv = f.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        if len(argv) < 2 or argv[1] not in ROLES:
            continue
        try:
            if os.path.realpath(f"/proc/{d}/exe") != binary:
                continue
        except OSError:
            continue
        role = argv[1]
        if role == "store":
            role = "store-" + argv[argv.index("--name") + 1]
        found[role] = (int(d), argv)
    return found


def ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime


def lease_writes(port):
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                  timeout=5).read().decode()
    m = re.search(r'^kubeletsim_api_writes_total\{operation="lease"\} (\S+)',
                  body, re.M)
    return float(m.group(1)) if m else 0.0


def window_args():
    """The command line both renewal scripts take."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--fleet-log", required=True)
    ap.add_argument("--kplane", required=True)
    ap.add_argument("--settle", type=float, default=10)
    ap.add_argument("--offset", type=float, default=14)
    ap.add_argument("--span", type=float, default=20)
    return ap.parse_args()


def wait_for_window(a):
    """Waits for fleet.sh's "registered in" line, then SETTLE + OFFSET s;
    returns procs() of the --kplane binary."""
    while True:
        try:
            with open(a.fleet_log) as f:
                if "registered in" in f.read():
                    break
        except OSError:
            pass
        time.sleep(0.2)
    time.sleep(a.settle + a.offset)
    return procs(os.path.realpath(a.kplane))


def main():
    a = window_args()
    ps = wait_for_window(a)
    sim = ps.get("kubeletsim")
    if sim is None:
        sys.exit("no kubeletsim of " + a.kplane)
    port = sim[1][sim[1].index("--port") + 1]
    t0 = {r: ticks(p) for r, (p, _) in ps.items()}
    w0 = lease_writes(port)
    load = open("/proc/loadavg").read().split()[0]
    time.sleep(a.span)
    t1 = {r: ticks(p) for r, (p, _) in ps.items()}
    w1 = lease_writes(port)
    hz = os.sysconf("SC_CLK_TCK")
    writes = w1 - w0
    us = {r: (t1[r] - t0[r]) / hz * 1e6 / max(writes, 1) for r in ps}
    order = sorted(r for r in us if r.startswith("store-")) + [
        r for r in ("apiserver", "controller-manager", "kubeletsim") if r in us]
    print(f"load {load}; lease writes {writes:.0f} in {a.span:.0f} s; "
          "µs CPU per renewal: " +
          ", ".join(f"{r} {us[r]:.0f}" for r in order) +
          f", store sum {sum(us[r] for r in order if r.startswith('store-')):.0f}"
          f", total {sum(us.values()):.0f}")


if __name__ == "__main__":
    main()
