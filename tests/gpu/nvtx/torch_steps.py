"""PyTorch training steps inside NVTX ranges (torch.cuda.nvtx), for the nvtx provider's GPU test:
"train" > "step K" > "forward K" / "backward K", a fixed small model, so every step launches the same
kernels. Prints the plan; exit 77 (skip) without torch or a CUDA device."""
import sys

from need_torch import torch_or_skip

torch = torch_or_skip()

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
torch.manual_seed(0)
dev = torch.device("cuda")
model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(64, 256, device=dev)
y = torch.randint(0, 10, (64,), device=dev)
loss_fn = torch.nn.CrossEntropyLoss()
# One step outside any range first: cuBLAS and the allocator set themselves up there.
loss_fn(model(x), y).backward()
opt.step()
opt.zero_grad(set_to_none=False)
torch.cuda.synchronize()
torch.cuda.nvtx.range_push("train")
for step in range(STEPS):
    torch.cuda.nvtx.range_push(f"step {step}")
    torch.cuda.nvtx.range_push(f"forward {step}")
    loss = loss_fn(model(x), y)
    torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_push(f"backward {step}")
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=False)
    torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_pop()
torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
print(f"steps={STEPS}")
