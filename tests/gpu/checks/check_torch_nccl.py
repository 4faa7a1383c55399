"""Checks an analysed experiment of torch_nccl.py (aggregate.json) against the plan the program
printed: NCCL's ranges (domain "NCCL") are there once per call, and their decoded payloads say
exactly the message size and reduction of each call; every "step K" range once; the communicator's
created once; nothing undecoded or unmatched.
usage: check_torch_nccl.py AGGREGATE_JSON PROGRAM_OUTPUT"""
import collections
import json
import re
import sys

agg = json.load(open(sys.argv[1]))
plan_line = next(line for line in open(sys.argv[2]) if line.startswith("{"))
plan = json.loads(plan_line)
steps = plan["steps"]
failed = False


def fail(msg):
    global failed
    failed = True
    print("FAILED:", msg)


def parse(payload):
    size = re.search(r"Message size \[bytes\]=(\d+)", payload)
    op = re.search(r"Reduction operation=(\S+)", payload)
    return (int(size.group(1)) if size else None, op.group(1) if op else None)


want = collections.Counter()
for p in plan["plan"]:
    want[(p["name"], p["bytes"], p["op"])] += steps
w = plan["warm_up"]
want[(w["name"], w["bytes"], w["op"])] += 1
want_calls = collections.Counter()
for (name, _, _), n in want.items():
    want_calls[name] += n

by = {(r["domain"], r["name"]): r for r in agg["nvtx_ranges"]}
got = collections.Counter()
for name, n in sorted(want_calls.items()):
    r = by.get(("NCCL", name))
    if not r:
        fail(f"no NCCL range {name}")
        continue
    if r["count"] != n:
        fail(f"NCCL / {name}: {r['count']} ranges, the program called it {n} times")
    for p in r["payloads"]:
        size, op = parse(p["payload"])
        if op is not None and op.startswith("nccl"):
            op = op[len("nccl"):]  # an enum named as in nccl.h rather than NCCL's own schema
        got[(name, size, op)] += p["count"]
    print(f"NCCL / {name}: {r['count']} ranges, {r['distinct_payloads']} payloads: " +
          "; ".join(f"{p['count']} x {p['payload']}" for p in r["payloads"]))
if got != want:
    fail(f"payloads decoded {dict(got)}, the program's calls {dict(want)}")

for k in range(steps):
    r = by.get(("", f"step {k}"))
    if not r or r["count"] != 1:
        fail(f"step {k}: missing or not once")

inits = [r for (d, n), r in by.items() if d == "NCCL" and n.startswith("ncclCommInit")]
if len(inits) != 1 or inits[0]["count"] != 1:
    fail(f"not one communicator creation: {[(r['name'], r['count']) for r in inits]}")
# (NCCL 2.28.9's creation range carries no payload: it is printed, not required.)
print("communicator:", "; ".join(f"{r['name']} x {r['count']}: {r['payloads']}" for r in inits))

for p in agg["processes"]:
    nv = p.get("nvtx", {})
    if nv.get("undecoded_payloads", 0) or nv.get("unmatched_ends", 0):
        fail(f"{p['label']}: {nv}")
others = sorted(n for (d, n) in by if d == "NCCL" and n not in want_calls and not n.startswith("ncclCommInit"))
print("other NCCL ranges:", ", ".join(f"{n} x {by[('NCCL', n)]['count']}" for n in others))
print("FAILED" if failed else "ok")
sys.exit(1 if failed else 0)
