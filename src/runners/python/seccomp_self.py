"""The sandboxes' seccomp policy, installed by the python runner on itself.

On the process driver bubblewrap loads the policy (src/sandbox/seccomp-filter.ts)
before the runner starts, and Docker loads it as a container's profile; a pod
gets only its runtime's default profile, which lets a process fork and exec, and
a Localhost profile would need a file on every node. CPython has no permission
model to stand in for it, so the runner loads the same BPF program itself
(`--seccomp-self FILE`; the image build writes FILE from seccompFilter()) before
it reads any script: PR_SET_NO_NEW_PRIVS, then PR_SET_SECCOMP with the program.

A filter covers the thread that installs it and every thread and process it
starts afterwards, not threads already running; so it goes in while the runner
is its one thread, and the runner refuses to start otherwise. Anything that
stops the filter going in ends the runner (fail closed): a sandbox without its
policy never serves.
"""

import ctypes
import os
import sys

# linux/prctl.h, linux/seccomp.h, linux/filter.h
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
SOCK_FILTER_BYTES = 8
BPF_MAXINSNS = 4096

# Not a usage error (64): the runner was started as asked and cannot be made safe.
SECCOMP_EXIT_STATUS = 70


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _refuse(path, reason):
    sys.stderr.write(f"python-runner: FATAL: cannot install the seccomp filter {path}: {reason}; the runner does not start without it\n")
    sys.stderr.flush()
    os._exit(SECCOMP_EXIT_STATUS)


def install(path):
    """Loads the classic BPF program in `path` (struct sock_filter[], native byte order) as this process's seccomp filter, or ends the runner."""
    try:
        with open(path, "rb") as handle:
            program = handle.read(BPF_MAXINSNS * SOCK_FILTER_BYTES + 1)
    except OSError as error:
        _refuse(path, error.strerror or str(error))
    count, rest = divmod(len(program), SOCK_FILTER_BYTES)
    if rest != 0 or not 0 < count <= BPF_MAXINSNS:
        _refuse(path, f"{len(program)} bytes is not a BPF program (a whole number of {SOCK_FILTER_BYTES}-byte instructions, 1 to {BPF_MAXINSNS})")
    threads = len(os.listdir("/proc/self/task"))
    if threads != 1:
        _refuse(path, f"the runner has {threads} threads already; a filter would not cover the others")
    libc = ctypes.CDLL(None, use_errno=True)
    prctl = libc.prctl
    # Every argument an unsigned long, as the kernel reads them: a C int would leave a register's upper half to chance.
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    if prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        _refuse(path, f"PR_SET_NO_NEW_PRIVS: {os.strerror(ctypes.get_errno())}")
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(count, ctypes.cast(buffer, ctypes.c_void_p))
    # The kernel checks the program (EINVAL for a bad one) and copies it; the buffer need not outlive the call.
    if prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0) != 0:
        _refuse(path, f"PR_SET_SECCOMP: {os.strerror(ctypes.get_errno())}")
