"""A traced run's verbs operations against what softnic executed (SOFTNIC_WQE_LOG: one
softnic-verbs-<host>-<pid>.txt per process, testbed/softnic/engine/op_log.hpp), an oracle that
knows nothing of the profiler. Per process (matched by pid) and per QP, the send-queue work
requests the trace holds in aggregate.json (qps[].by_opcode) must be those softnic completed:
the same count and bytes per opcode. Simple mode records one event per post call, so a chain of
several opcodes is one MIXED entry there: in Simple mode each QP's totals are compared (WRs and
bytes), in Full and Aggregate mode each opcode's.
usage: check_verbs_oracle.py AGGREGATE_JSON ORACLE_DIR [--min-qps N]
Prints one line per QP and a verdict; exit 0 when every QP matches, 1 otherwise, 2 on bad input."""
import json
import re
import sys
from pathlib import Path

SEND_OPCODES = {"SEND", "SEND_IMM", "WRITE", "WRITE_IMM", "READ", "ATOMIC_CS", "ATOMIC_FA", "MIXED"}
LINE = re.compile(r"qp=0x([0-9a-f]+) type=(\w+) wrs=(\d+) ops=(.*)")
FILE = re.compile(r"softnic-verbs-.*-(\d+)\.txt")


def read_oracle(directory):
    """{pid: {qpn: {opcode: (wrs, bytes)}}} of every process's log."""
    out = {}
    for f in sorted(Path(directory).iterdir()):
        m = FILE.fullmatch(f.name)
        if not m:
            continue
        qps = out.setdefault(int(m.group(1)), {})
        for line in f.read_text().splitlines():
            fields = LINE.fullmatch(line)
            if not fields:
                sys.exit(f"check_verbs_oracle: {f}: unparsed line: {line}")
            ops = {}
            for op in filter(None, fields.group(4).split(",")):
                name, wrs, nbytes = op.split(":")
                ops[name] = (int(wrs), int(nbytes))
            qps[int(fields.group(1), 16)] = ops
    return out


def main():
    args = sys.argv[1:]
    min_qps = 1
    if "--min-qps" in args:
        i = args.index("--min-qps")
        min_qps = int(args[i + 1])
        del args[i:i + 2]
    if len(args) != 2:
        print(__doc__.splitlines()[-2], file=sys.stderr)
        return 2
    try:
        agg = json.loads(Path(args[0]).read_text())
    except (OSError, ValueError) as e:
        print(f"check_verbs_oracle: {args[0]}: {e}", file=sys.stderr)
        return 2
    if not Path(args[1]).is_dir():
        print(f"check_verbs_oracle: {args[1]} is not a directory", file=sys.stderr)
        return 2
    oracle = read_oracle(args[1])
    processes = {p["process_id"]: p for p in agg["processes"]}
    traced = {}  # (pid, qpn) -> (mode, {opcode: (wrs, bytes)})
    for q in agg["qps"]:
        p = processes[q["process_id"]]
        ops = {k: (v["ops"], v["bytes"]) for k, v in q.get("by_opcode", {}).items() if k in SEND_OPCODES}
        traced[(p["pid"], q["qp_num"])] = (p.get("mode", "simple"), ops)
    ok, checked = True, 0
    for pid in sorted(oracle):
        for qpn, want in sorted(oracle[pid].items()):
            mode, got = traced.get((pid, qpn), (None, {}))
            if not want and not got:
                continue  # a QP that sent nothing, traced or not
            if mode is None:
                print(f"process {pid} QP 0x{qpn:x}: softnic executed {want}, the trace has no such QP: MISMATCH")
                ok = False
                continue
            if mode == "simple":
                total = lambda ops: (sum(w for w, _ in ops.values()), sum(b for _, b in ops.values()))
                same = total(got) == total(want)
                shown = f"{total(got)[0]}/{total(want)[0]} WRs, {total(got)[1]}/{total(want)[1]} B traced/executed"
            else:
                same = got == want
                shown = ", ".join(f"{op} {got.get(op, (0, 0))[0]}/{w} ({got.get(op, (0, 0))[1]}/{b} B)"
                                  for op, (w, b) in sorted(want.items()))
                shown += "".join(f", {op} {w} traced, never executed" for op, (w, _) in sorted(got.items()) if op not in want)
            print(f"process {pid} QP 0x{qpn:x} ({mode}): {shown}: {'ok' if same else 'MISMATCH'}")
            ok &= same
            checked += 1
    for (pid, qpn), (mode, got) in sorted(traced.items()):
        if got and pid in oracle and qpn not in oracle[pid]:
            print(f"process {pid} QP 0x{qpn:x}: {sum(w for w, _ in got.values())} WRs traced that softnic never executed: MISMATCH")
            ok = False
    if checked < min_qps:
        print(f"only {checked} QP(s) to check, at least {min_qps} expected (SOFTNIC_WQE_LOG set for every process?)")
        ok = False
    print(f"{checked} QPs: {'every send-queue operation softnic executed is in the trace, and nothing else' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
