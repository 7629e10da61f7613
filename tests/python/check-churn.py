"""check-churn.py SAMPLER: Python frames read while the thread calls and returns without pause.

The main thread holds the GIL and calls, recurses into and returns from
functions as fast as it can, so the frames lagwatch reads are freed and
reused under the read. SAMPLER (python-sampler.c, loaded with ctypes)
samples it as the watcher does. Checks (TAP) that the process survives,
that Python frames were found, and that every one is right: a function of
this file (or the module), with a line inside that function's body.
A wrong name or line presented as right fails.
"""
import ctypes
import inspect
import sys
import threading

sys.dont_write_bytecode = True  # imports below write nothing into the source tree
from asan_reexec import reexec  # noqa: E402

reexec()

sampler = ctypes.CDLL(sys.argv[1])
SAMPLES = 400
stop = False
out = {}


def leaf(n):
    total = 0
    for i in range(n):
        total += i
    return total


def middle(depth):
    if depth == 0:
        return leaf(depth + 3)
    return middle(depth - 1) + leaf(depth)


def churn():
    depth = 0
    while not stop:
        middle(depth % 12)
        depth += 1


def sample(tid):
    global stop
    buf = ctypes.create_string_buffer(8 << 20)
    try:
        out["with_python"] = sampler.lw_test_python_sample(tid, SAMPLES, buf, len(buf))
        out["frames"] = buf.value.decode()
    finally:
        stop = True


def body_lines(function):
    lines, first = inspect.getsourcelines(function)
    return range(first, first + len(lines))


thread = threading.Thread(target=sample, args=(threading.get_native_id(),))
thread.start()
churn()
thread.join()

valid = {f.__qualname__: body_lines(f) for f in (leaf, middle, churn)}
here = __file__
frames = [line.split("\t") for line in out["frames"].splitlines()]
wrong = [f for f in frames
         if not ((f[0] in valid and f[1] == here and int(f[2]) in valid[f[0]])
                 or (f[0] == "<module>" and f[1] == here))]
seen = sorted({f[0] for f in frames})
print("# %d of %d samples held Python frames; %d frames, functions %s"
      % (out["with_python"], SAMPLES, len(frames), seen))
for f in wrong[:10]:
    print("# wrong: %s" % (f,))
print("1..3")
print("%s 1 - the process survived %d samples of a thread in constant call and return"
      % ("ok", SAMPLES))
print("%s 2 - Python frames were found in samples (%d)"
      % ("ok" if out["with_python"] > 0 else "not ok", out["with_python"]))
print("%s 3 - every Python frame names a function of this file at a line of its body (%d wrong)"
      % ("ok" if not wrong and frames else "not ok", len(wrong)))
