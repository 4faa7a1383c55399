"""The GPU tests' Python programs need torch and a CUDA device (and, for NCCL, a torch built with
it): torch_or_skip() returns torch, or prints why not and exits 77 (ctest's skip)."""
import sys


def torch_or_skip(nccl=False):
    try:
        import torch
        import torch.distributed as dist
    except ImportError:
        print("skipped: no torch")
        sys.exit(77)
    if not torch.cuda.is_available():
        print("skipped: no CUDA device")
        sys.exit(77)
    if nccl and (not dist.is_available() or not dist.is_nccl_available()):
        print("skipped: this torch has no NCCL")
        sys.exit(77)
    return torch
