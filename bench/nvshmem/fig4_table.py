#!/usr/bin/env python3
"""The Fig. 4 table from nvshmem_perftests.sh's results.tsv: per test, table, scope and size, the
median (and the largest) of what each mode's runs printed, the change of the median against
untraced, and the trace's bytes per operation softnic executed. Runs that failed are left out and
counted."""
import csv
import statistics
import sys
from collections import defaultdict


def main(path):
    rows = list(csv.DictReader(open(path), delimiter="\t"))
    values = defaultdict(list)
    failed = defaultdict(int)
    trace = defaultdict(list)
    for r in rows:
        if r["rc"] != "0":
            failed[(r["test"], r["mode"])] += 1
            continue
        values[(r["test"], r["table"], r["scope"], int(r["size"]), r["mode"])].append(float(r["value"]))
        if r["mode"] != "untraced" and int(r["wqes"]) > 0:
            trace[(r["test"], r["mode"])].append(int(r["trace_bytes"]) / int(r["wqes"]))
    modes = [m for m in ("untraced", "forward", "wqe") if any(k[4] == m for k in values)]
    keys = sorted({k[:4] for k in values})
    print("| test | table | scope | size (B) | " + " | ".join(f"{m} median (max)" for m in modes) + " | " +
          " | ".join(f"{m} vs untraced" for m in modes if m != "untraced") + " |")
    print("|" + "---|" * (4 + len(modes) + len(modes) - 1))
    for k in keys:
        cells, med = [], {}
        for m in modes:
            v = values.get(k + (m,), [])
            if v:
                med[m] = statistics.median(v)
                cells.append(f"{med[m]:.3f} ({max(v):.3f}), n={len(v)}")
            else:
                cells.append("–")
        changes = []
        for m in modes:
            if m == "untraced":
                continue
            if m in med and "untraced" in med and med["untraced"]:
                changes.append(f"{100.0 * (med[m] - med['untraced']) / med['untraced']:+.1f} %")
            else:
                changes.append("–")
        print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | " + " | ".join(cells) + " | " + " | ".join(changes) + " |")
    print()
    for (test, mode), v in sorted(trace.items()):
        print(f"- {test}, {mode}: {statistics.median(v):.1f} trace bytes per executed WQE (whole run, init included)")
    for (test, mode), n in sorted(failed.items()):
        print(f"- {test}, {mode}: {n} run(s) failed and are left out")


if __name__ == "__main__":
    main(sys.argv[1])
