#!/usr/bin/env python3
"""NVSHMEM's perftest shmem_put_latency traced with NVSHMEM_NVTX=all, as the analysis must see it
(aggregate.json): every operation in the range it was issued in.

- PE 0's kernels latency_kern, latency_kern_warp and latency_kern_block each put ITERATIONS times
  each size to PE 1 (and PE 1 runs none): exactly those operations and bytes. The perftest launches
  them itself, outside any NVSHMEM call, so they lie in no range.
- The perftest calls nvshmem_barrier_all once in its start-up (perftest/common), once before its
  loops and once after each size of each of its three loops: one NVSHMEM range per call on each PE.
  The barriers' operations, posted by the kernels NVSHMEM launches inside the call, are in those
  ranges.
- Every other operation lies in some NVSHMEM range (its initialisation's, its allocations'): the
  ranges and the perftest's kernels account for all of them. No range lost or left open.

  check_perftest_nvtx.py AGGREGATE.json MIN_SIZE MAX_SIZE SIZE_FACTOR ITERATIONS
"""
import json
import sys

KERNELS = ("latency_kern", "latency_kern_warp", "latency_kern_block")


def main():
    agg = json.load(open(sys.argv[1]))
    min_size, max_size, factor, iterations = map(int, sys.argv[2:6])
    sizes = []
    size = min_size
    while size <= max_size:
        sizes.append(size)
        size *= factor
    problems = []
    rank_of = {p["process_id"]: p.get("rank") for p in agg["processes"]}
    if sorted(rank_of.values()) != [0, 1]:
        problems.append(f"processes of ranks {sorted(rank_of.values())} in the trace, expected 0 and 1")

    # The perftest's own kernels: exactly its puts, from PE 0 to PE 1.
    want_ops, want_bytes = iterations * len(sizes), iterations * sum(sizes)
    kernel_ops = 0
    for name in KERNELS:
        rows = [k for k in agg["series"]["kernels"] if k.get("kernel_name") == name]
        got = [(rank_of[k["process_id"]], rank_of.get(t["process_id"]), t["ops"], t["bytes"]) for k in rows for t in k["to_peers"]]
        if got != [(0, 1, want_ops, want_bytes)]:
            problems.append(f"{name}: (from, to, ops, bytes) {got}, expected [(0, 1, {want_ops}, {want_bytes})]")
        else:
            print(f"check_perftest_nvtx: {name}: {want_ops} puts, {want_bytes} bytes, PE 0 to PE 1")
        kernel_ops += sum(g[2] for g in got)

    # NVSHMEM's ranges.
    ranges = {r["name"]: r for r in agg.get("nvtx_ranges", []) if r["domain"] == "NVSHMEM"}
    if not ranges:
        problems.append("no range of domain NVSHMEM: NVSHMEM_NVTX=all was not seen")
    barrier = ranges.get("nvshmem_barrier_all")
    calls = 2 * (2 + 3 * len(sizes))
    if not barrier or barrier["count"] != calls:
        problems.append(f"nvshmem_barrier_all: {barrier and barrier['count']} ranges, the perftest calls it {calls // 2} times on each of 2 PEs")
    elif barrier["ops"] == 0:
        problems.append("nvshmem_barrier_all: its ranges hold no operation (its kernels' barrier operations belong there)")
    else:
        print(f"check_perftest_nvtx: nvshmem_barrier_all: {calls} ranges holding {barrier['ops']} operations "
              f"({barrier['bytes']} bytes)")

    # All operations: in an NVSHMEM range, or the perftest's kernels' (in none).
    total = sum(p["ops"] for p in agg["processes"])
    in_ranges = sum(r["ops"] for r in agg.get("nvtx_ranges", []))
    other = {n: r["ops"] for n, r in ranges.items() if r["ops"] and n != "nvshmem_barrier_all"}
    if total != in_ranges + kernel_ops:
        problems.append(f"{total} operations recorded: {in_ranges} in ranges and {kernel_ops} of the perftest's kernels "
                        f"leave {total - in_ranges - kernel_ops} unaccounted for")
    else:
        print(f"check_perftest_nvtx: all {total} operations accounted for: {kernel_ops} of the perftest's kernels (no range), "
              f"{in_ranges} in NVSHMEM's ranges (besides the barriers': "
              f"{', '.join(f'{n} {o}' for n, o in sorted(other.items())) or 'none'})")

    # Nothing lost.
    for p in agg["processes"]:
        nvtx = p.get("nvtx") or {}
        lost = {k: nvtx.get(k) for k in ("not_ended", "unmatched_ends", "undecoded_payloads") if nvtx.get(k)}
        if p.get("events_dropped") or lost:
            problems.append(f"rank {rank_of[p['process_id']]}: events dropped {p.get('events_dropped')}, ranges {lost}")
    for p in problems:
        print("check_perftest_nvtx: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
