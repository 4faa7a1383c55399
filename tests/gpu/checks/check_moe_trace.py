#!/usr/bin/env python3
"""The MoE finding, recovered from the trace: each PE's moe_dispatch and moe_combine kernels moved
exactly the bytes the routing table says to each other PE (aggregate.json's series.kernels
to_peers, from the WQEs recovered from the GPUs' send queues), each kernel's bytes lie in the NVTX
range it was launched in, and the skew is found: the hot PE receives the most.

  check_moe_trace.py EXPECTED.json AGGREGATE.json
"""
import json
import sys


def main():
    expected = json.load(open(sys.argv[1]))
    agg = json.load(open(sys.argv[2]))
    npes = expected["npes"]
    rank_of = {p["process_id"]: p["rank"] for p in agg["processes"]}
    problems = []
    for kernel in ("moe_dispatch", "moe_combine"):
        got = [[0] * npes for _ in range(npes)]
        seen = set()
        for k in agg["series"]["kernels"]:
            if k.get("kernel_name") != kernel:
                continue
            src = rank_of[k["process_id"]]
            seen.add(src)
            for t in k["to_peers"]:
                if t["process_id"] is None:
                    problems.append(f"{kernel} of rank {src}: {t['bytes']} bytes to a peer not in the trace")
                    continue
                got[src][rank_of[t["process_id"]]] += t["bytes"]
        if seen != set(range(npes)):
            problems.append(f"{kernel}: kernels of ranks {sorted(seen)} in the trace, expected all {npes}")
        if got != expected[kernel]:
            problems.append(f"{kernel}: bytes per (source, destination) {got}, the routing table says {expected[kernel]}")
        else:
            print(f"check_moe_trace: {kernel}: the {npes}x{npes} byte matrix equals the routing table's: {got}")
    # The NVTX ranges each step ran in: every byte of a kernel in the range it was launched in.
    ranges = {r["name"]: r for r in agg.get("nvtx_ranges", []) if r["domain"] in (None, "")}
    for kernel, name in (("moe_dispatch", "moe dispatch"), ("moe_combine", "moe combine")):
        want = sum(map(sum, expected[kernel]))
        r = ranges.get(name)
        if not r or r["bytes"] != want or r["count"] != npes:
            problems.append(f"NVTX range {name!r}: {r and r['count']} ranges with {r and r['bytes']} bytes, expected {npes} with {want}")
        else:
            print(f"check_moe_trace: NVTX range {name!r}: {npes} ranges holding the {want} bytes of {kernel}")
    # The skew, as a user finds it: the PE whose expert receives the most.
    received = [sum(expected["moe_dispatch"][s][d] for s in range(npes)) for d in range(npes)]
    print(f"check_moe_trace: bytes each expert received {received}: PE {received.index(max(received))} is the hot one")
    for p in problems:
        print("check_moe_trace: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
