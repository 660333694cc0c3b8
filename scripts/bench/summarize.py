#!/usr/bin/env python3
"""Turns scripts/bench/store.sh's results.tsv (system, row, value per line)
into one Markdown table: row, kplane median (min-max), etcd median (min-max),
ratio kplane/etcd of the medians, rows in the order they first appear."""
import statistics
import sys


def fmt(v):
    if v >= 100:
        return f"{v:,.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def cell(vals):
    if not vals:
        return "-"
    m = statistics.median(vals)
    if len(vals) == 1:
        return fmt(m)
    return f"{fmt(m)} ({fmt(min(vals))}-{fmt(max(vals))})"


def main(path):
    rows, data = [], {}
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 3 or parts[2] == "":
                continue
            system, row, value = parts
            try:
                v = float(value)
            except ValueError:
                continue
            if row not in data:
                rows.append(row)
                data[row] = {"kplane": [], "etcd": []}
            data[row].setdefault(system, []).append(v)
    print("| row | kplane | etcd 3.4 | kplane/etcd |")
    print("|---|---|---|---|")
    for row in rows:
        k, e = data[row]["kplane"], data[row]["etcd"]
        ratio = "-"
        if k and e and statistics.median(e) != 0:
            ratio = f"{statistics.median(k) / statistics.median(e):.2f}"
        n = max(len(k), len(e))
        print(f"| {row} (n={n}) | {cell(k)} | {cell(e)} | {ratio} |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "results.tsv")
