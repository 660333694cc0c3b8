#!/usr/bin/env python3
"""Turns scripts/bench/apiserver.sh's results.tsv (row, value, annotation per
line) into one Markdown table: row, median (min-max) over the runs, and
either the SLO verdict or a ratio, rows in the order they first appear.

Annotations: "slo:<ms>" - the value is a latency bounded by the Kubernetes
SLO of <ms>; the verdict is judged on the worst run (every run must meet
it). "ratio:<row>" - prints median(this row) / median(<row>)."""
import statistics
import sys

from summarize import cell  # the store table's "median (min-max)" cell


def main(path):
    rows, data, notes = [], {}, {}
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 2 or parts[1] == "":
                continue
            row, value = parts[0], parts[1]
            try:
                v = float(value)
            except ValueError:
                continue
            if row not in data:
                rows.append(row)
                data[row] = []
            data[row].append(v)
            if len(parts) > 2 and parts[2]:
                notes[row] = parts[2]
    print("| row | median (min-max) | SLO / ratio |")
    print("|---|---|---|")
    for row in rows:
        vals = data[row]
        note = notes.get(row, "")
        extra = ""
        if note.startswith("slo:"):
            bound = float(note[4:])
            worst = max(vals)
            limit = f"{bound / 1000:g} s"
            extra = (f"met (<= {limit})" if worst <= bound
                     else f"**missed** (> {limit} in {sum(v > bound for v in vals)} of {len(vals)} runs)")
        elif note.startswith("ratio:"):
            other = data.get(note[6:])
            if other and statistics.median(other) > 0:
                r = statistics.median(vals) / statistics.median(other)
                extra = f"{r:.2f} x store put at the same clients"
        print(f"| {row} (n={len(vals)}) | {cell(vals)} | {extra} |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "results.tsv")
