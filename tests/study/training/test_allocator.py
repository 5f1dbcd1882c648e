"""glibc's malloc settings (study.training.allocator): that they take effect, and that only an entry point
sets them (training and measuring leave malloc as they find it).

glibc has no getter for its thresholds, so they are observed through what they decide. ``heap_kept``
allocates 2000 blocks of 100 kB (below any mmap threshold, so they come from the heap) and frees them:
glibc then trims the heap top, giving the memory back to the kernel, when it exceeds the trim threshold
(128 kB at first, at most 64 MB as glibc adapts it), unless ``keep_freed_memory`` raised that threshold to
2^31 - 1, when the 200 MB stay releasable at the top of the heap (``mallinfo2().keepcost``). Each check
runs in a fresh interpreter, so this test process's malloc stays as it was.
"""

import ctypes
import subprocess
import sys
from pathlib import Path

import pytest

from archstudy.study.training.allocator import MMAP_THRESHOLD, TRIM_THRESHOLD

ROOT = Path(__file__).resolve().parents[3]

PROBE = r"""
import ctypes, ctypes.util, sys

class Mallinfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]

libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
libc.mallinfo2.restype = Mallinfo2
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]

def heap_kept(blocks=2000, size=100 * 1024):
    ps = [0] * blocks  # the list first: growing it between the blocks would leave its buffer above some of them
    for i in range(blocks):
        ps[i] = libc.malloc(size)
    for p in reversed(ps):
        libc.free(p)
    # free bytes the heap keeps (fordblks), not only its top chunk (keepcost): an allocation made meanwhile
    # by another thread of the process (torch's, Ray's) can sit above the blocks and split the free space
    return libc.mallinfo2().fordblks >= blocks * size // 2

print("fresh", heap_kept())
for step in sys.argv[1:]:
    if step == "train":
        from archstudy.sampling import ArchSpec
        from archstudy.study import MetricOptions, Protocol, build_network, load_dataset, measure, train_architecture
        data = load_dataset("waveform-noise")
        spec = ArchSpec(depth=3, width=16, d_in=40, d_out=3, norm="batch")
        train_architecture(spec, data, seed=0, protocol=Protocol.of("quick").replace(num_lrs=2, max_epochs=1))
        measure(build_network(spec, seed=0), data, spec, options=MetricOptions(nlc_batches=2, variability_grid=8))
    elif step == "keep":
        from archstudy.study.training.allocator import keep_freed_memory
        assert keep_freed_memory()
    elif step == "worker":
        import torch
        from archstudy.study.execution.unit import prepare_worker
        prepare_worker(1)
        assert torch.get_num_threads() == 1
    print(step, heap_kept())
"""


def _probe(*steps: str) -> dict:
    res = subprocess.run([sys.executable, "-c", PROBE, *steps], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    return dict(line.split() for line in res.stdout.splitlines())


def _glibc_with_mallinfo2() -> bool:
    try:
        return sys.platform.startswith("linux") and hasattr(ctypes.CDLL("libc.so.6"), "mallinfo2")
    except OSError:
        return False


needs_glibc = pytest.mark.skipif(not _glibc_with_mallinfo2(), reason="not glibc >= 2.33 (no mallinfo2)")


def test_malloc_thresholds_fit_a_c_int():
    """mallopt takes a C int and ctypes wraps larger values silently (1 << 40 arrives as 0: trim on every free)."""
    for value in (MMAP_THRESHOLD, TRIM_THRESHOLD):
        assert ctypes.c_int(value).value == value
    assert MMAP_THRESHOLD == 32 * 1024 * 1024  # glibc's largest mmap threshold on 64-bit (HEAP_MAX_SIZE / 2)


@needs_glibc
def test_the_settings_keep_freed_heap_memory_in_the_process():
    assert _probe("keep") == {"fresh": "False", "keep": "True"}


@needs_glibc
def test_training_and_measuring_leave_malloc_as_they_find_it():
    assert _probe("train") == {"fresh": "False", "train": "False"}


@needs_glibc
def test_a_study_worker_sets_them_at_its_entry_point():
    assert _probe("worker") == {"fresh": "False", "worker": "True"}  # study.execution.unit.prepare_worker
