#!/usr/bin/env python3
"""The BFS finding, recovered from the trace: at every level's device barrier the PE that was made
slow (--slow-pe, --delay-us) arrives last, by the GPUs' own clocks (the run held the imbalance)
and in the trace, and the spread between the first and the last arrival is the one the GPUs
measured with their own clocks (the program's expected.json) to within a tolerance; each PE's
data phase of each level moved exactly the bytes the host's BFS says.

The trace's side is aggregate.json's series: the kernel's control phases lined up across the PEs
(series.barriers: barrier 0 is the one before the first level, barrier L+1 ends level L) and each
PE's data phases (series.kernels[].phases).

  check_bfs_trace.py EXPECTED.json AGGREGATE.json
"""
import json
import sys

KERNEL = "bfs_levels"


def bfs_barriers(agg):
    """aggregate.json's barrier series of the BFS kernel (series.barriers): one in a BFS run."""
    return [b for b in agg["series"]["barriers"] if KERNEL in (b["kernel_name"] or "")]


def tolerance_ns(delay_ns):
    """How far the trace's arrivals may be from the GPUs' own: between the GPU's record, taken
    just before the barrier call, and the barrier's first signal as the profiler's poller saw its
    doorbell are the barrier's entry and the poller's look, microseconds."""
    return max(100_000, delay_ns // 10)


def last_arrival_problem(level, trace_last, gpu_arrivals, slow, tolerance):
    """What is wrong with the PE the trace has last at a level's barrier, or None. The program's
    own clocks say first whether the run held the imbalance: PEs that share a GPU without MPS
    time-slice it, and a PE whose kernel was switched out while the slow one spun can arrive
    after it. Only then is the trace's last PE compared, with the slow one, or without one, with the
    GPUs' last where it led the next by more than the tolerance."""
    gpu_last = max(range(len(gpu_arrivals)), key=lambda p: gpu_arrivals[p])
    lead = gpu_arrivals[gpu_last] - max((t for p, t in enumerate(gpu_arrivals) if p != gpu_last), default=0)
    if slow >= 0 and gpu_last != slow:
        return (f"level {level}: by the GPUs' own clocks PE {gpu_last} arrived last, not the slow PE {slow}: the run did not "
                f"hold the imbalance (PEs that share a GPU without the MPS daemon time-slice it: is it running?)")
    if trace_last != gpu_last and (slow >= 0 or lead > tolerance):
        return f"level {level}: PE {trace_last} arrived last at its barrier in the trace, PE {gpu_last} by the GPUs' own clocks (by {lead} ns)"
    return None


def main():
    expected = json.load(open(sys.argv[1]))
    agg = json.load(open(sys.argv[2]))
    npes, levels, slow, delay = expected["npes"], expected["levels"], expected["slow_pe"], expected["delay_ns"]
    tolerance = tolerance_ns(delay)
    rank_of = {p["process_id"]: p["rank"] for p in agg["processes"]}
    problems = []
    found = bfs_barriers(agg)
    if len(found) != 1:
        print(f"check_bfs_trace: {len(found)} kernels named {KERNEL} with barriers in the trace, expected 1")
        return 1
    b = found[0]
    pes = [rank_of[p["process_id"]] for p in b["participants"]]
    if sorted(pes) != list(range(npes)):
        problems.append(f"the barriers' PEs are {pes}, expected all {npes}")
    if b["barriers"] != levels + 1 or b["unmatched"]:
        problems.append(f"{b['barriers']} barriers lined up (unmatched: {b['unmatched']}), expected {levels + 1}: one before each of the {levels} levels and one after")
    worst = 0
    for level in range(min(levels, b["barriers"] - 1)):
        r = level + 1
        gpu = expected["arrival_gpu_ns"][level]
        gpu_spread = max(gpu) - min(gpu)
        spread = b["spread_ns"][r]
        worst = max(worst, abs(spread - gpu_spread))
        problem = last_arrival_problem(level, pes[b["last"][r]], gpu, slow, tolerance)
        if problem:
            problems.append(problem)
        if abs(spread - gpu_spread) > tolerance:
            problems.append(f"level {level}: arrival spread {spread} ns in the trace, {gpu_spread} ns by the GPUs' clocks (tolerance {tolerance})")
        # The others arrive when their puts completed, the slow PE its delay after its own did:
        # the spread is the delay give or take how much longer the others' puts took.
        if slow >= 0 and spread < delay // 2:
            problems.append(f"level {level}: arrival spread {spread} ns, not even half the injected {delay} ns")
    # Data: each PE's n-th data phase of the kernel is its level n's puts.
    for k in agg["series"]["kernels"]:
        if KERNEL not in (k["kernel_name"] or ""):
            continue
        s = rank_of[k["process_id"]]
        got = [p["bytes"] for p in k["phases"] if p["kind"] == "data"]
        want = [sum(expected["put_bytes"][l][s]) for l in range(levels)]
        if got != want:
            problems.append(f"PE {s}: bytes of its data phases {got}, the host's BFS says {want}")
    for p in problems:
        print("check_bfs_trace: " + p)
    if not problems:
        print(f"check_bfs_trace: {levels} levels: PE {slow} last at every level's barrier, spreads {b['spread_ns'][1:]} ns "
              f"(injected {delay} ns; at most {worst} ns from the GPUs' own clocks); every data phase's bytes exact")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
