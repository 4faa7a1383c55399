"""NCCL's own NVTX ranges and payloads, for the nvtx provider's GPU test: PyTorch's NCCL process
group on one GPU (a one-rank communicator: the only NCCL a one-GPU machine runs), STEPS steps in
NVTX ranges "step K", each calling every collective below once with a known size. NCCL annotates
each call with a range in its domain "NCCL" whose payload carries the message size and the
reduction; check_torch_nccl.py compares them with PLAN. Prints the plan and a checksum of every
result (unchanged by tracing); exit 77 (skip) without torch, a CUDA device or NCCL."""
import json
import os
import sys
import tempfile

from need_torch import torch_or_skip

torch = torch_or_skip(nccl=True)
import torch.distributed as dist  # noqa: E402 (torch is there now)

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
dev = torch.device("cuda", 0)
# (NCCL's range name, what NCCL's payload says: message size in bytes, reduction; elements, dtype)
PLAN = [
    ("ncclAllReduce", 16384, "Sum", 4096, torch.float32),
    ("ncclAllReduce", 8000, "Max", 1000, torch.int64),
    ("ncclBroadcast", 2048, None, 512, torch.float32),
    ("ncclAllGather", 1024, None, 256, torch.float32),
]
# (reduce_scatter_tensor is left out: on one rank PyTorch 2.11 copies without calling NCCL.)

store = tempfile.NamedTemporaryFile(prefix="torch-nccl-store-", delete=False).name
dist.init_process_group("nccl", init_method=f"file://{store}", rank=0, world_size=1, device_id=dev)
world = dist.get_world_size()
# One call outside any range first: the communicator and its buffers are set up there.
warm = torch.ones(1, device=dev)
dist.all_reduce(warm)
torch.cuda.synchronize()


def collective(name, elems, dtype, op):
    x = (torch.arange(elems, device=dev) % 97).to(dtype)
    if name == "ncclAllReduce":
        dist.all_reduce(x, op=dist.ReduceOp.SUM if op == "Sum" else dist.ReduceOp.MAX)
        return x
    if name == "ncclBroadcast":
        dist.broadcast(x, src=0)
        return x
    if name == "ncclAllGather":
        out = torch.empty(elems * world, dtype=dtype, device=dev)
        dist.all_gather_into_tensor(out, x)
        return out
    out = torch.empty(elems, dtype=dtype, device=dev)
    dist.reduce_scatter_tensor(out, x.repeat(world), op=dist.ReduceOp.SUM)
    return out


sums = []
for step in range(STEPS):
    torch.cuda.nvtx.range_push(f"step {step}")
    for name, _, op, elems, dtype in PLAN:
        sums.append(int(collective(name, elems, dtype, op).to(torch.float64).sum().item()))
    torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
dist.destroy_process_group()
if os.path.exists(store):  # the file store may have removed it itself
    os.unlink(store)
print(json.dumps({"steps": STEPS, "world": world, "warm_up": {"name": "ncclAllReduce", "bytes": 4, "op": "Sum"},
                  "plan": [{"name": n, "bytes": b, "op": o} for n, b, o, _, _ in PLAN]}))
print("checksums", sums)
