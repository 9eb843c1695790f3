"""Driver jobs from Python threads, counted by the ioctl's name and the
issuing thread's tid: the framework tests' stand-in for an accelerator.

Under /dev/kvm ($KX_KVM_PATH: another node of it) each job is one KVM_RUN of a one-page real-mode guest that
does `out 0x10, al; jmp back` (every run exits with KVM_EXIT_IO); without
/dev/kvm it is one BLKZEROOUT on the loop device named by $KX_LOOP_DEV (the
test sets it up). Pure ioctls through fcntl, no build step.

    jobs = Jobs()                 # the driver this machine has
    jobs.run(n)                   # n jobs on the calling thread (set-up included)
    jobs.counts                   # {(tid, "KVM_RUN"): n, ...} every ioctl issued
"""

import collections
import ctypes
import fcntl
import mmap
import os
import stat
import struct
import threading

# <linux/kvm.h>, x86_64: _IO(0xAE, nr), _IOW/_IOR with the struct's size.
KVM_CREATE_VM = 0xAE01
KVM_GET_VCPU_MMAP_SIZE = 0xAE04
KVM_CREATE_VCPU = 0xAE41
KVM_SET_USER_MEMORY_REGION = 0x4020AE46  # struct kvm_userspace_memory_region, 32 bytes
KVM_RUN = 0xAE80
KVM_SET_REGS = 0x4090AE82  # struct kvm_regs, 144 bytes
KVM_GET_SREGS = 0x8138AE83  # struct kvm_sregs, 312 bytes
KVM_SET_SREGS = 0x4138AE84
KVM_EXIT_IO = 2
# <linux/fs.h>: _IO(0x12, 127): zero a byte range {start, len} of a block device.
BLKZEROOUT = 0x127F

GUEST_GPA = 0x1000
GUEST_CODE = bytes([0xE6, 0x10, 0xEB, 0xFC])  # out 0x10, al ; jmp -4


def driver():
    """'kvm' where /dev/kvm is a character device (as lib.sh decides), else 'loop'."""
    try:
        return "kvm" if stat.S_ISCHR(os.stat("/dev/kvm").st_mode) else "loop"
    except OSError:
        return "loop"


def job_name():
    return "KVM_RUN" if driver() == "kvm" else "BLKZEROOUT"


class Jobs:
    def __init__(self):
        self.kind = driver()
        self.lock = threading.Lock()
        self.counts = collections.Counter()
        self.idents = {}  # tid -> threading.get_ident() (glibc's pthread_t)

    def _ioctl(self, fd, name, req, arg=0):
        ret = fcntl.ioctl(fd, req, arg)
        with self.lock:
            self.counts[(threading.get_native_id(), name)] += 1
            self.idents[threading.get_native_id()] = threading.get_ident()
        return ret

    def run(self, n):
        """n jobs on the calling thread, with the ioctls that set them up."""
        if self.kind == "kvm":
            self._kvm(n)
        else:
            self._loop(n)

    def _loop(self, n):
        fd = os.open(os.environ["KX_LOOP_DEV"], os.O_RDWR)
        try:
            rng = bytearray(struct.pack("QQ", 0, 4096))
            for _ in range(n):
                self._ioctl(fd, "BLKZEROOUT", BLKZEROOUT, rng)
        finally:
            os.close(fd)

    def _kvm(self, n):
        kvm = os.open(os.environ.get("KX_KVM_PATH", "/dev/kvm"), os.O_RDWR | os.O_CLOEXEC)
        fds = [kvm]
        mem = mmap.mmap(-1, 0x1000)
        try:
            vm = self._ioctl(kvm, "KVM_CREATE_VM", KVM_CREATE_VM, 0)
            fds.append(vm)
            mem[0:len(GUEST_CODE)] = GUEST_CODE
            addr = ctypes.addressof(ctypes.c_char.from_buffer(mem))
            region = bytearray(struct.pack("IIQQQ", 0, 0, GUEST_GPA, 0x1000, addr))
            self._ioctl(vm, "KVM_SET_USER_MEMORY_REGION", KVM_SET_USER_MEMORY_REGION, region)
            size = self._ioctl(kvm, "KVM_GET_VCPU_MMAP_SIZE", KVM_GET_VCPU_MMAP_SIZE, 0)
            vcpu = self._ioctl(vm, "KVM_CREATE_VCPU", KVM_CREATE_VCPU, 0)
            fds.append(vcpu)
            run = mmap.mmap(vcpu, size, mmap.MAP_SHARED, mmap.PROT_READ)
            sregs = bytearray(312)
            self._ioctl(vcpu, "KVM_GET_SREGS", KVM_GET_SREGS, sregs)
            # cs is the first struct kvm_segment: base (u64), limit (u32), selector (u16).
            struct.pack_into("Q", sregs, 0, 0)
            struct.pack_into("H", sregs, 12, 0)
            self._ioctl(vcpu, "KVM_SET_SREGS", KVM_SET_SREGS, sregs)
            regs = bytearray(144)  # rax..r15, rip (slot 16), rflags (slot 17)
            struct.pack_into("QQ", regs, 16 * 8, GUEST_GPA, 0x2)
            self._ioctl(vcpu, "KVM_SET_REGS", KVM_SET_REGS, regs)
            for _ in range(n):
                self._ioctl(vcpu, "KVM_RUN", KVM_RUN, 0)
                reason = struct.unpack_from("I", run, 8)[0]
                if reason != KVM_EXIT_IO:
                    raise RuntimeError("KVM_RUN exited with reason %d, not KVM_EXIT_IO" % reason)
            run.close()
        finally:
            for fd in reversed(fds):
                os.close(fd)
            mem.close()

    def per_thread(self, name):
        """{tid: count} of the ioctl called name."""
        return {tid: c for (tid, n), c in self.counts.items() if n == name}
