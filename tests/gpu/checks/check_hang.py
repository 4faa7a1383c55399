"""Checks a traced run of nvshmem_hang (hang_test.sh): the program printed exactly its lines, the
processes that should have dumped did (and only they), and aggregate.json's hangs.gpu_waiting names
the kernel each waited in and what it waited for.
usage: check_hang.py peer-silent|deadlock WAIT_S AGGREGATE_JSON PE0_LOG PE1_LOG"""
import json
import sys

mode, wait_s, agg_path, logs = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:6]
failed = False


def fail(msg):
    global failed
    failed = True
    print("FAILED:", msg)


# The program's own lines, as it prints them untraced.
plan = f"nvshmem_hang: mode {mode}, 2 PEs, 4 rounds of 4096 B, wait {wait_s} s"
if mode == "peer-silent":
    want = [[plan, f"nvshmem_hang: PE 0: wait_for_put timed out after {wait_s} s: PE 1 never put"], []]
    kernel, dumpers = "wait_for_put", ["rank 0"]
else:
    dl = lambda r: f"nvshmem_hang: PE {r}: wait_then_put timed out after {wait_s} s: each PE waits for the other's put (deadlock)"
    want = [[plan, dl(0)], [dl(1)]]
    kernel, dumpers = "wait_then_put", ["rank 0", "rank 1"]
for r, log in enumerate(logs):
    got = [line.rstrip("\n") for line in open(log) if line.startswith("nvshmem_hang:")]
    if got != want[r]:
        fail(f"PE {r} printed {got}, expected {want[r]}")

h = json.load(open(agg_path))["hangs"]
dumped = sorted({d["label"] for d in h["dumps"]})
if dumped != dumpers:
    fail(f"dumps from {dumped}, expected {dumpers}")
for d in h["dumps"]:
    print(f"dump: {d['label']} {d['reason']} after {d['idle_ns'] / 1e9:.3f} s idle, {d['gpu_kernels_running']} GPU kernels running")
    if d["reason"] != "no progress" or d["gpu_kernels_running"] != 1:
        fail(f"{d['label']}: reason {d['reason']}, {d['gpu_kernels_running']} kernels running (expected no progress, 1)")
waits = {g["label"]: g for g in h["gpu_waiting"]}
if sorted(waits) != dumpers or len(h["gpu_waiting"]) != len(dumpers):
    fail(f"gpu_waiting for {[g['label'] for g in h['gpu_waiting']]}, expected one each for {dumpers}")
for label in dumpers:
    g = waits.get(label)
    if not g:
        continue
    peer = "rank 1" if label == "rank 0" else "rank 0"
    print(f"{label}: kernel {g['kernel']} running {g['running_at_dump_ns'] / 1e9:.3f} s at the dump; "
          + "; ".join(f"{p['peer_label']}: {p['waits_for']}" for p in g["peers"]))
    if g["kernel"] != kernel:
        fail(f"{label} waited in {g['kernel']}, expected {kernel}")
    # The dump comes 2 s (--hang-dump) after the last progress, which the kernel's start precedes a little.
    if not 1.9e9 <= g["running_at_dump_ns"] < wait_s * 1e9:
        fail(f"{label}: its kernel ran {g['running_at_dump_ns']} ns at the dump, expected 2 s to {wait_s} s")
    if [p["peer_label"] for p in g["peers"]] != [peer]:
        fail(f"{label}: GPU peers {[p['peer_label'] for p in g['peers']]}, expected [{peer}]")
        continue
    p = g["peers"][0]
    if mode == "peer-silent":
        expect = f"a put {peer} never issued: its GPU issued nothing to {label} since "
        kernels = []
    else:
        expect = f"each waits for the other: {peer}'s kernel {kernel} also runs and has issued nothing to {label} since "
        kernels = [kernel]
    if not p["waits_for"].startswith(expect):
        fail(f"{label}: waits for '{p['waits_for']}', expected it to begin '{expect}'")
    if p["peer_kernels_running"] != kernels:
        fail(f"{label}: {peer} ran {p['peer_kernels_running']} at the dump, expected {kernels}")
    if "last_issued_by_peer_ns" not in p or g["launched_ns"] - p["last_issued_by_peer_ns"] < -1e6:
        fail(f"{label}: {peer}'s last put to it should precede the waiting kernel's launch: {p}")
print("FAILED" if failed else "ok")
sys.exit(1 if failed else 0)
