"""bench-python.py MODULE [--short]: one sample of a Python stack, on /usr/bin/python3.

The main thread spins in Python 20 calls deep (the GIL held, as a stuck
loop thread holds it); another thread loads MODULE (bench-python.c) with
ctypes and samples it as lagwatch's watcher does: signal + stack copy,
unwind, Python frames read and merged. Prints the medians and checks that
every Python frame was found and that a sample costs at most 20 us (like a
native one: bench-overhead section 3), the latter only in full runs (the
suite's --short run under load checks the frames only).
"""
import ctypes
import sys
import threading

DEPTH = 20
module = ctypes.CDLL(sys.argv[1])
short = "--short" in sys.argv
stop = False
out = {}
medians = (ctypes.c_double * 3)()
counts = (ctypes.c_int * 2)()


def spin(depth):
    if depth > 1:
        return spin(depth - 1) + 1
    while not stop:
        pass
    return 1


def sampler(tid):
    global stop
    try:
        out["frames"] = module.lw_bench_python_sample(tid, 100 if short else 2000, medians, counts)
    finally:
        stop = True


thread = threading.Thread(target=sampler, args=(threading.get_native_id(),))
thread.start()
spin(DEPTH)
thread.join()
failures = 0
print("One sample of a Python stack (CPython %d.%d, %d Python calls deep, medians)" % (*sys.version_info[:2], DEPTH))
capture, unwind, python = medians
total = capture + unwind + python
met = total <= 20.0
print("  %-9s signal + copy %.1f us, unwind of %d native frames %.1f us, Python frames read and "
      "merged %.1f us (%d frames after the merge): %.1f us (target <= 20 us)"
      % ("(info)" if short else "[ok]" if met else "[MISSED]", capture, counts[0], unwind, python,
         counts[1], total))
failures += not short and not met
# The frames: spin x DEPTH and <module>.
expected = DEPTH + 1
print("  %-9s Python frames in one sample: %d (expected %d)"
      % ("[ok]" if out["frames"] == expected else "[MISSED]", out["frames"], expected))
failures += out["frames"] != expected
sys.exit(1 if failures else 0)
