"""A traced NCCL run over softnic (each rank its own host) as the analysis shows it, against
softnic's own log of what it executed (SOFTNIC_WQE_LOG, as check_verbs_oracle.py reads it):
  - every rank traced, no event dropped;
  - NCCL's connections: each rank's QPs pair with QPs of the other ranks (NCCL's send and
    receive connections, several per peer with several channels) or with themselves (NCCL's
    flush QP, connected to itself);
  - the rank matrix: bytes[s][d] equals what softnic executed on the QPs of rank s whose peer is d
    (WRITEs, SENDs and atomics from s to d; READs from d to s), for every pair of ranks.
usage: check_nccl_trace.py AGGREGATE_JSON ORACLE_DIR RANKS
Prints what it found; exit 0 when all holds, 1 otherwise."""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_verbs_oracle import read_oracle  # noqa: E402

READ_LIKE = {"READ"}


def main():
    if len(sys.argv) != 4:
        print(__doc__.splitlines()[-2], file=sys.stderr)
        return 2
    agg = json.loads(Path(sys.argv[1]).read_text())
    oracle = read_oracle(sys.argv[2])
    ranks = int(sys.argv[3])
    problems = []
    procs = {p["process_id"]: p for p in agg["processes"]}
    if len(procs) != ranks:
        problems.append(f"{len(procs)} processes traced, {ranks} ranks ran")
    dropped = sum(p.get("events_dropped", 0) for p in procs.values())
    if dropped:
        problems.append(f"{dropped} events dropped")
    rank_of = {pid: p.get("rank") for pid, p in procs.items()}
    qps = {q["qp_id"]: q for q in agg["qps"]}
    cross, per_rank_loops = 0, {}
    for c in agg["connections"]:
        a, b = qps[c["qp_a"]], qps[c["qp_b"]]
        if c["qp_a"] == c["qp_b"]:
            r = rank_of[a["process_id"]]
            per_rank_loops[r] = per_rank_loops.get(r, 0) + 1
        elif a["process_id"] != b["process_id"]:
            cross += 1
        else:
            problems.append(f"connection {c['connection_id']} joins two QPs of one rank ({c['a']}, {c['b']})")
    unconnected = [q for q in agg["qps"] if q.get("connection_id") is None]
    if unconnected:
        problems.append(f"{len(unconnected)} QPs with no connection in the trace")
    print(f"connections: {cross} between ranks, {sum(per_rank_loops.values())} QPs connected to themselves "
          f"({', '.join(f'rank {r}: {n}' for r, n in sorted(per_rank_loops.items()))})")
    if cross < ranks - 1 or cross % 2:
        problems.append(f"{cross} connections between ranks: NCCL connects every rank to its ring neighbours, one send and one receive connection each")
    # The matrix from softnic's log: each QP's executed bytes, from its rank to its peer's.
    labels = agg["matrices"]["rank"]["labels"]
    index = {lab: i for i, lab in enumerate(labels)}
    want = [[0] * len(labels) for _ in labels]
    pid_of = {pid: p["pid"] for pid, p in procs.items()}
    for q in agg["qps"]:
        ops = oracle.get(pid_of[q["process_id"]], {}).get(q["qp_num"], {})
        if not ops or q.get("peer_process_id") is None:
            continue
        s, d = index[procs[q["process_id"]]["label"]], index[procs[q["peer_process_id"]]["label"]]
        for op, (_, nbytes) in ops.items():
            if op in READ_LIKE:
                want[d][s] += nbytes
            else:
                want[s][d] += nbytes
    got = agg["matrices"]["rank"]["bytes"]
    for s, row in enumerate(want):
        for d, nbytes in enumerate(row):
            if s != d and got[s][d] != nbytes:
                problems.append(f"rank matrix {labels[s]} -> {labels[d]}: {got[s][d]} B in the trace, {nbytes} B executed by softnic")
    print("rank matrix (B, from softnic's log): " + "; ".join(
        f"{labels[s]} -> {labels[d]} {want[s][d]}" for s in range(len(labels)) for d in range(len(labels)) if want[s][d]))
    for p in problems:
        print("check_nccl_trace: " + p)
    print("NCCL's connections and rank matrix: " + ("as softnic executed them" if not problems else "MISMATCH"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
