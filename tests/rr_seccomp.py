"""Run a command where the kernel refuses new namespaces, as a container runtime's default
seccomp profile does: ``python tests/rr_seccomp.py COMMAND [ARGS...]``.

A seccomp filter (x86-64 only) makes ``unshare`` and a ``clone`` asking for any new namespace
fail with EPERM, and ``clone3`` with ENOSYS (so the C library falls back to ``clone``), then
executes the command under it. Everything else is allowed.
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct
import sys

AUDIT_ARCH_X86_64 = 0xC000003E
NR_CLONE, NR_UNSHARE, NR_CLONE3 = 56, 272, 435
NAMESPACES = 0x00020000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
NAMESPACES |= 0x02000000  # CLONE_NEWCGROUP
EPERM, ENOSYS = 1, 38
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
# BPF opcodes
LD_ABS_W, JEQ_K, JSET_K, RET_K = 0x20, 0x15, 0x45, 0x06


def _program() -> bytes:
    def op(code: int, jt: int, jf: int, k: int) -> bytes:
        return struct.pack("HBBI", code, jt, jf, k)

    return b"".join(
        [
            op(LD_ABS_W, 0, 0, 4),  # 0: arch
            op(JEQ_K, 1, 0, AUDIT_ARCH_X86_64),  # 1
            op(RET_K, 0, 0, RET_ALLOW),  # 2: another architecture: no opinion
            op(LD_ABS_W, 0, 0, 0),  # 3: syscall number
            op(JEQ_K, 5, 0, NR_UNSHARE),  # 4 -> 10
            op(JEQ_K, 5, 0, NR_CLONE3),  # 5 -> 11
            op(JEQ_K, 0, 2, NR_CLONE),  # 6 -> 7, else 9
            op(LD_ABS_W, 0, 0, 16),  # 7: clone's flags (low word of args[0])
            op(JSET_K, 1, 0, NAMESPACES),  # 8 -> 10
            op(RET_K, 0, 0, RET_ALLOW),  # 9
            op(RET_K, 0, 0, RET_ERRNO | EPERM),  # 10
            op(RET_K, 0, 0, RET_ERRNO | ENOSYS),  # 11
        ]
    )


def refuse_namespaces() -> None:
    """Install the filter on this process (and everything it executes)."""
    if platform.machine() != "x86_64":
        raise OSError("the namespace filter is written for x86-64")
    code = _program()
    filters = ctypes.create_string_buffer(code)

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    prog = SockFprog(len(code) // 8, ctypes.cast(filters, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS")
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "PR_SET_SECCOMP")


if __name__ == "__main__":
    refuse_namespaces()
    os.execv(sys.argv[1], sys.argv[1:])
