"""A PyTorch matmul + tanh loop on one thread for SECONDS (default 3): the
framework workload of test_dwarf_frameworks.sh and tests/bench/frameworks_dwarf.sh."""
import sys, time
import torch

torch.set_num_threads(1)
a = torch.randn(256, 256); b = torch.randn(256, 256)
end = time.monotonic() + (float(sys.argv[1]) if len(sys.argv) > 1 else 3)
while time.monotonic() < end:
    a = torch.tanh(a @ b)
