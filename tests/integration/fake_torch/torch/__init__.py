"""A stand-in for torch, for test_bundle.sh: the GPU check's torch branch runs
scripts/gpu_workload.py against it where no PyTorch or GPU is. Its NVTX
ranges go to the libkxprof_annotate.so beside NVTX_INJECTION64_PATH (as the
injection library's would), loaded at the first range as NVTX loads its
injection; tensors and matrix products do nothing."""
import ctypes
import os

__version__ = "0+fake"


class _Version:
    cuda = "fake"


version = _Version()
_lib = None


def _annotate():
    global _lib
    if _lib is None:
        d = os.path.dirname(os.environ["NVTX_INJECTION64_PATH"])
        _lib = ctypes.CDLL(os.path.join(d, "libkxprof_annotate.so"))
    return _lib


class _Nvtx:
    @staticmethod
    def range_push(name):
        _annotate().kxprof_range_push(name.encode())

    @staticmethod
    def range_pop():
        _annotate().kxprof_range_pop()


class _Cuda:
    nvtx = _Nvtx()

    @staticmethod
    def is_available():
        return True

    @staticmethod
    def device_count():
        return 1

    @staticmethod
    def synchronize():
        pass

    @staticmethod
    def get_device_name(i):
        return "fake"

    @staticmethod
    def memory_allocated():
        return 0

    @staticmethod
    def memory_reserved():
        return 0


cuda = _Cuda()


class _Tensor:
    def to(self, dev):
        return self

    def __truediv__(self, other):
        return self

    def __add__(self, other):
        return self


def device(name):
    return name


def randn(*shape, **kw):
    return _Tensor()


def matmul(a, b):
    return b
