"""Checks an analysed experiment of torch_steps.py (aggregate.json): every step's ranges are there
once, and each step's forward and backward ranges hold the same number of kernel launches (more
than none) as every other step's: each launch was attributed to the step that made it."""
import json
import sys

agg = json.load(open(sys.argv[1]))
steps = int(sys.argv[2])
by = {(r["domain"], r["name"]): r for r in agg["nvtx_ranges"]}
failed = False
per_step = []
for k in range(steps):
    row = []
    for name in (f"step {k}", f"forward {k}", f"backward {k}"):
        r = by.get(("", name))
        if not r or r["count"] != 1:
            print(f"{name}: missing or not once")
            failed = True
            r = {}
        row.append(r.get("kernel_launches", 0))
    per_step.append(tuple(row[1:]))
    print(f"step {k}: forward {row[1]} launches, backward {row[2]} launches (directly in the step: {row[0]})")
if len(set(per_step)) != 1 or per_step[0][0] == 0 or per_step[0][1] == 0:
    failed = True
outside = [r for r in agg["nvtx_ranges"] if r["name"] == "train"]
print(f"train: {outside[0]['count'] if outside else 0} range, {outside[0]['kernel_launches'] if outside else 0} launches directly in it")
print("FAILED" if failed else "ok")
sys.exit(1 if failed else 0)
