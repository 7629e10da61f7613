"""check-moved.py SAMPLER: a sample whose thread moved on before its Python frames were read says so.

The watcher copies a stuck thread's native stack, then reads its Python
frames while the thread runs on. When the thread has called into another
evaluation loop in between (here: from a loop spinning in shallow() into a
callback that map() runs in a loop of its own), the frames read do not fit
the stack copied: the sample keeps its native frames and gives the reason
"moved" (lw_python_last_missing()), which the report carries
(stacks[].python_frames_missing, samples_python_missing). The sampler
(SAMPLER, python-sampler.c) copies the main thread's stack while it spins
in shallow(), lets it move on, then merges. Checks (TAP):
1. a stack merged while the thread still spins where it was copied gets its
   Python frames and no reason;
2. the same after the thread moved into the callback: no Python frames,
   reason "moved".
"""
import ctypes
import sys
import threading

sys.dont_write_bytecode = True  # imports below write nothing into the source tree
from asan_reexec import reexec  # noqa: E402

reexec()

sampler = ctypes.CDLL(sys.argv[1])
ATTEMPTS = 200  # captures of 50 ms at most, until one succeeds (a loaded machine can time one out)
phase = [0]
in_shallow = threading.Event()
in_callback = threading.Event()
results = []


def shallow():
    in_shallow.set()
    while phase[0] == 0:
        pass


def callback(_):
    in_callback.set()
    while phase[0] == 1:
        pass
    return 0


def main_thread_work():
    shallow()
    list(map(callback, [0]))


def merge():
    why = ctypes.create_string_buffer(32)
    with_python = sampler.lw_test_python_merge_captured(why, len(why))
    return with_python, why.value.decode()


def sample(tid):
    try:
        in_shallow.wait()
        native = 0
        for _ in range(ATTEMPTS):
            native = sampler.lw_test_python_capture(tid)
            if native > 0:
                break
        if native == 0:
            results.append((False, "no capture of the main thread in %d attempts" % ATTEMPTS))
            return
        with_python, why = merge()
        results.append((with_python > 0 and why == "none",
                        "merged where it was copied: %d Python frames, reason %s" % (with_python, why)))
        # Once it runs the callback, the frames read are not the copy's.
        phase[0] = 1
        in_callback.wait()
        with_python, why = merge()
        results.append((with_python == 0 and why == "moved",
                        "merged after the thread moved into another loop: %d Python frames, reason %s"
                        % (with_python, why)))
    finally:
        phase[0] = 2


thread = threading.Thread(target=sample, args=(threading.get_native_id(),))
thread.start()
main_thread_work()
thread.join()
print("1..%d" % len(results))
for number, (ok, what) in enumerate(results, 1):
    print("%s %d - %s" % ("ok" if ok else "not ok", number, what))
sys.exit(0 if results and all(ok for ok, _ in results) else 1)
