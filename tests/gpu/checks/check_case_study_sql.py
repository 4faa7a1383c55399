#!/usr/bin/env python3
"""The case studies' findings from the SQL a user runs (queries/*.sql, shown in
docs/case-studies.md), on an analysed experiment, against what the program injected
(EXPECTED.json, written by the program) and what the analysis's aggregate.json says:

  bfs: barrier_arrivals.sql finds the slow PE last at every level's barrier, by the spread the
       GPUs measured with their own clocks (within the tolerance check_bfs_trace.py uses), and
       equal to aggregate.json's series.barriers, barrier by barrier; level_bytes.sql gives the
       bytes of every (level, source, destination) exactly as the host's BFS; doorbells_per_level.sql
       shows each PE ringing data and control doorbells at every level;
  moe: kernel_matrix.sql gives each kernel's byte matrix exactly as the routing table.

  check_case_study_sql.py bfs|moe SIGMATRACE EXPERIMENT EXPECTED.json QUERIES_DIR
"""
import json
import subprocess
import sys

from check_bfs_trace import bfs_barriers, last_arrival_problem, tolerance_ns


def sql(st, exp, path):
    out = subprocess.run([st, "sql", exp, "--json", open(path).read()], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"check_case_study_sql: {path}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def bfs(st, exp, expected, queries, problems):
    agg = json.load(open(f"{exp}/aggregate.json"))
    slow, delay, levels = expected["slow_pe"], expected["delay_ns"], expected["levels"]
    tolerance = tolerance_ns(delay)
    rows = sql(st, exp, f"{queries}/barrier_arrivals.sql")
    if [r["barrier"] for r in rows] != list(range(levels + 1)):
        problems.append(f"barrier_arrivals: barriers {[r['barrier'] for r in rows]}, expected 0..{levels}")
    b = bfs_barriers(agg)
    if len(b) == 1 and [r["spread_ns"] for r in rows] != b[0]["spread_ns"]:
        problems.append(f"barrier_arrivals: spreads {[r['spread_ns'] for r in rows]}, aggregate.json's {b[0]['spread_ns']}")
    for r in rows[1:]:
        level = r["barrier"] - 1
        gpu = expected["arrival_gpu_ns"][level]
        problem = last_arrival_problem(level, r["last_pe"], gpu, slow, tolerance)
        if problem:
            problems.append("barrier_arrivals: " + problem)
        if abs(r["spread_ns"] - (max(gpu) - min(gpu))) > tolerance:
            problems.append(f"barrier_arrivals: level {level}: spread {r['spread_ns']} ns, {max(gpu) - min(gpu)} by the GPUs' clocks")
    got = {(r["level"], r["from_pe"], r["to_pe"]): r["bytes"] for r in sql(st, exp, f"{queries}/level_bytes.sql")}
    want = {(l, s, d): n for l in range(levels) for s, row in enumerate(expected["put_bytes"][l]) for d, n in enumerate(row) if n}
    if got != want:
        diff = sorted(set(got.items()) ^ set(want.items()))[:6]
        problems.append(f"level_bytes: {len(got)} (level, from, to) cells, expected {len(want)}; first differences {diff}")
    per_level = sql(st, exp, f"{queries}/doorbells_per_level.sql")
    for r in per_level:
        if r["level"] >= 0 and (not r["data_doorbells"] or not r["control_doorbells"]):
            problems.append(f"doorbells_per_level: level {r['level']} PE {r['pe']}: {r['data_doorbells']} data, {r['control_doorbells']} control")
    if len({r["level"] for r in per_level if r["level"] >= 0}) != levels:
        problems.append(f"doorbells_per_level: levels {sorted({r['level'] for r in per_level})}, expected -1..{levels - 1}")
    return f"{levels} levels: PE {slow} last at each barrier; every (level, source, destination)'s bytes exact"


def moe(st, exp, expected, queries, problems):
    rows = sql(st, exp, f"{queries}/kernel_matrix.sql")
    n = expected["npes"]
    for kernel in ("moe_dispatch", "moe_combine"):
        got = [[0] * n for _ in range(n)]
        for r in rows:
            if r["kernel"] == kernel:
                got[r["from_pe"]][r["to_pe"]] += r["bytes"]
        if got != expected[kernel]:
            problems.append(f"kernel_matrix: {kernel}: {got}, the routing table says {expected[kernel]}")
    return "both kernels' byte matrices exact"


def main():
    study, st, exp, expected_path, queries = sys.argv[1:6]
    problems = []
    said = {"bfs": bfs, "moe": moe}[study](st, exp, json.load(open(expected_path)), queries, problems)
    for p in problems:
        print("check_case_study_sql: " + p)
    if not problems:
        print(f"check_case_study_sql: {study}: {said}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
