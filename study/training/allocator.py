"""Keep freed memory in the process for the next training step instead of returning it to the kernel.

A training step allocates and frees the same activation-sized blocks (a few MB each) every step. glibc's
malloc serves blocks above its mmap threshold with fresh ``mmap`` pages and returns them with ``munmap``
on free, so every step pays a page fault per 4 KB touched, which costs more than the op itself on small
stacks. Raising the mmap threshold to its maximum (32 MB on 64-bit) and never trimming the heap top keeps
those blocks in the heap, where the next step reuses them (what that gains per step is measured in
docs/performance.md).

Process-wide, so only an entry point calls it, once: a study worker (``study.execution.unit.execute_unit``) and
``archstudy bench``; ``train_architecture`` itself leaves malloc as it finds it. Idempotent; a no-op where
malloc is not glibc's. Blocks above 32 MB (the stacks of 1M parameter nets) keep glibc's own policy.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc malloc.h
MMAP_THRESHOLD = 32 * 1024 * 1024  # glibc's largest (HEAP_MAX_SIZE / 2 on 64-bit)
TRIM_THRESHOLD = 2**31 - 1  # mallopt takes a C int: a larger value would wrap (1 << 40 wraps to 0: trim always)

_done: list[bool] = []


def keep_freed_memory() -> bool:
    """Configure glibc's malloc as the module docstring says; True if it took effect (now or before)."""
    if _done:
        return _done[0]
    ok = False
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            mallopt = libc.mallopt
            mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
            ok = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
        except (OSError, AttributeError):
            ok = False
    _done.append(ok)
    return ok
