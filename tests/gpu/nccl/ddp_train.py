"""A PyTorch DistributedDataParallel training loop, the first thing a PyTorch user runs: a small
MLP on fixed synthetic data, STEPS steps, each rank one process started by mpirun through
testbed/nccl/nccl_rank.sh (on one GPU, each rank its own emulated host over softnic's IB). DDP
all-reduces the gradients in buckets of 1 MiB (several NCCL all-reduces per step), and the loss is
averaged over the ranks with one more. Rank 0 prints every step's loss, every rank a checksum of
its weights (equal on every rank: DDP keeps them in step); deterministic, so a traced run prints
what an untraced one does. usage: ddp_train.py STEPS RENDEZVOUS_FILE. Exit 77 without torch, a
CUDA device or NCCL."""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS, set before CUDA starts
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "nvtx"))
from need_torch import torch_or_skip  # noqa: E402

torch = torch_or_skip(nccl=True)
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

steps = int(sys.argv[1])
rendezvous = sys.argv[2]
rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("RANK", "0")))
world = int(os.environ.get("OMPI_COMM_WORLD_SIZE", os.environ.get("WORLD_SIZE", "1")))
torch.use_deterministic_algorithms(True)
dev = torch.device("cuda", 0)
dist.init_process_group("nccl", init_method=f"file://{rendezvous}", rank=rank, world_size=world, device_id=dev)

torch.manual_seed(0)  # the same initial weights on every rank (DDP also broadcasts rank 0's)
model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                            torch.nn.Linear(1024, 10)).to(dev)
ddp = DistributedDataParallel(model, device_ids=[0], bucket_cap_mb=1)
opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
g = torch.Generator().manual_seed(1000 + rank)  # each rank its own shard of the data
x = torch.randn(steps, 64, 256, generator=g).to(dev)
y = torch.randint(0, 10, (steps, 64), generator=g).to(dev)
for s in range(steps):
    opt.zero_grad()
    loss = F.cross_entropy(ddp(x[s]), y[s])
    loss.backward()
    opt.step()
    mean = loss.detach().clone()
    dist.all_reduce(mean)
    if rank == 0:
        print(f"step {s} loss {mean.item() / world:.6f}", flush=True)
checksum = sum(p.detach().double().sum().item() for p in model.parameters())
print(f"rank {rank} weights {checksum:.9f}", flush=True)
dist.destroy_process_group()
