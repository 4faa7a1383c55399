#!/usr/bin/env python3
"""Checks that every verbs operation of a traced NCCL run belongs to the NCCL call whose data it
moves (aggregate.json of `sigmatrace analyze`; docs/nccl.md, "Each operation in its call").

usage: check_nccl_calls.py AGGREGATE_JSON RANKS [--sql TRACE_SQLITE_TOOL EXPERIMENT]

Requires: RANKS processes ran NCCL tasks; every work request each of them posted is tied to a task
(by its wr_id, or by its QP for the ones NCCL posts without its own: the last of a chained post, a
receive's clear-to-send write), none left over, no step NCCL did not tie to a task; every call
that moves data put work on the network; every all-reduce, all-gather and reduce-scatter carried
on the wire at least what its algorithm must move. Prints one line per kind of call."""
import json
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    agg = json.load(open(sys.argv[1]))
    ranks = int(sys.argv[2])
    errors = []
    procs = [p for p in agg.get("processes", []) if p.get("nccl")]
    if len(procs) != ranks:
        errors.append(f"{len(procs)} processes ran NCCL tasks, expected {ranks}")
    for p in procs:
        n = p["nccl"]
        label = p.get("label", "?")
        if n["tasks"] == 0:
            errors.append(f"{label}: no NCCL task")
        if n["ops_unattributed"]:
            errors.append(f"{label}: {n['ops_unattributed']} work requests tied to no NCCL call")
        if n["net_events_without_task"]:
            errors.append(f"{label}: {n['net_events_without_task']} work requests NCCL announced for no task")
        if n["ops_attributed"] + n["ops_unattributed"] != p["ops"]:
            errors.append(f"{label}: {n['ops_attributed']} attributed + {n['ops_unattributed']} not != {p['ops']} work requests")
        print(f"{label}: {n['tasks']} tasks, {n['ops_attributed']} of {p['ops']} work requests tied to their call "
              f"({n['matched_by_wr_id']} by wr_id, {n['matched_by_qp']} by QP)")
    calls = agg.get("nccl_calls", [])
    if not calls:
        errors.append("no NCCL calls in the analysis")
    for c in calls:
        what = f"{c['func']} {c['bytes']} B {c['algorithm']}/{c['protocol']} ({c['ranks']} ranks)"
        ratio = c.get("wire_per_algorithm_byte")
        print(f"  {what:44} {c['calls']:6} calls  {c['wrs'] / max(1, c['calls']):8.1f} WRs/call  "
              f"wire/algorithm {ratio if ratio is None else round(ratio, 4)}  network mean {c['network_mean_ns'] / 1e3:9.1f} us")
        if c["bytes"] and c["ranks"] > 1 and c["calls_with_network"] != c["calls"]:
            errors.append(f"{what}: {c['calls'] - c['calls_with_network']} of {c['calls']} calls put nothing on the network")
        if ratio is not None and c["func"] in ("ncclAllReduce", "ncclAllGather", "ncclReduceScatter") and ratio < 1.0:
            errors.append(f"{what}: the wire carried {ratio:.4f} of what the algorithm must move")
    for e in errors:
        print("FAIL:", e)
    sys.exit(1 if errors else 0)


main()
