#!/usr/bin/env python3
"""The paper's Table I on NCCL: from a bench/nccl/nccl_tests_overhead.sh OUT, per rank count and
traced mode, the trace's size and events per run (median over the repetitions), and per all-reduce
and rank (the all-reduces of one rank counted by the nccl provider in Simple and Full mode; the
same program, so the same count, in Aggregate mode). usage: nccl_trace_sizes.py OUT"""
import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    rows = list(csv.DictReader(open(Path(sys.argv[1]) / "results.tsv", newline=""), delimiter="\t"))
    values = defaultdict(list)  # (case, kind, metric) -> values of successful runs
    for r in rows:
        if r["rc"] == "0" and r["value"]:
            values[(r["case"], r["kind"], r["metric"])].append(float(r["value"]))
    cases = sorted({r["case"] for r in rows}, key=lambda c: int(c.rstrip("ranks") or 0))
    kinds = [k for k in dict.fromkeys(r["kind"] for r in rows) if k != "untraced"]
    print("| ranks | mode | trace bytes per run | events per run | dropped | all-reduces per rank | bytes per all-reduce and rank | events per all-reduce and rank | bytes per event |")
    print("|---|---|---|---|---|---|---|---|---|")
    for case in cases:
        ranks = int(case.rstrip("ranks"))
        per_rank = [statistics.median(values[(case, k, "allreduces")]) for k in kinds if values.get((case, k, "allreduces"))]
        allreduces = per_rank[0] if per_rank else None
        for kind in kinds:
            b, e = values.get((case, kind, "trace_bytes")), values.get((case, kind, "events"))
            if not b or not e:
                continue
            b, e = statistics.median(b), statistics.median(e)
            dropped = max(values.get((case, kind, "dropped"), [0]))
            per = (f"{b / allreduces / ranks:,.0f} | {e / allreduces / ranks:,.1f}" if allreduces else "- | -")
            print(f"| {ranks} | {kind} | {b:,.0f} | {e:,.0f} | {dropped:.0f} | {allreduces if allreduces else '-'} | {per} | {b / e:.1f} |")


main()
