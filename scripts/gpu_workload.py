"""The GPU check's workload (scripts/gpu-check.sh): a short PyTorch CUDA job.

Each step copies a host tensor to the device and runs a few matrix products,
inside NVTX ranges (torch.cuda.nvtx), so a capture holds the driver's ioctls,
the NVTX ranges (through NVTX_INJECTION64_PATH) and the CPU stacks.
Usage: python3 gpu_workload.py [SECONDS] [SIZE]
"""
import os
import subprocess
import sys
import time

import torch


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 8.0
    size = int(sys.argv[2]) if len(sys.argv) > 2 else 2048
    if not torch.cuda.is_available():
        print("gpu_workload: torch sees no CUDA device", file=sys.stderr)
        return 3
    dev = torch.device("cuda")
    nvtx = torch.cuda.nvtx
    # The first NVTX call loads the injection library; kxprof finds a copy
    # loaded later within a second (its rescan), so the measured steps wait.
    nvtx.range_push("warmup")
    a = torch.randn(size, size, device=dev)
    b = torch.randn(size, size, device=dev)
    torch.cuda.synchronize()
    nvtx.range_pop()
    time.sleep(1.5)
    host = torch.randn(size, size)
    steps = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        nvtx.range_push("step")
        nvtx.range_push("h2d")
        x = host.to(dev)
        nvtx.range_pop()
        nvtx.range_push("matmul")
        for _ in range(8):
            x = torch.matmul(a, x) / size + b
        torch.cuda.synchronize()
        nvtx.range_pop()
        nvtx.range_pop()
        steps += 1
    print("gpu_workload: %d steps of %dx%d on %s in %.1f s"
          % (steps, size, size, torch.cuda.get_device_name(0), seconds))
    print_memory()
    return 0


def print_memory():
    """The device memory this process holds, by PyTorch and by the driver
    (nvidia-smi), on standard error (the GPU check's log.txt): the reference
    for the capture's NVIDIA memory table (live bytes at the end)."""
    mib = 1024 * 1024
    print("gpu_workload: torch memory_allocated %d B, memory_reserved %d B"
          % (torch.cuda.memory_allocated(), torch.cuda.memory_reserved()),
          file=sys.stderr)
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-compute-apps=pid,used_memory",
             "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError) as e:
        print("gpu_workload: nvidia-smi: %s" % e, file=sys.stderr)
        return
    for line in out.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) == 2 and fields[0] == str(os.getpid()):
            print("gpu_workload: nvidia-smi used_memory of pid %s: %s MiB (%d B)"
                  % (fields[0], fields[1], int(fields[1]) * mib), file=sys.stderr)
            return
    print("gpu_workload: nvidia-smi lists no compute app with pid %d: %r"
          % (os.getpid(), out), file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
