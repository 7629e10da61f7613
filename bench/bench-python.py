"""bench-python.py MODULE [--short]: one sample of a Python stack beside a native one.

Runs on /usr/bin/python3 in the suite, and on any CPython lagwatch reads
(3.11 to 3.14: `python3.X bench/bench-python.py MODULE`, docs/python.md's
table by version). The main thread spins in Python 20 calls deep
(the GIL held, as a stuck loop thread holds it); MODULE (bench-python.c),
loaded with ctypes, samples it and a C thread of its own spinning 20 calls
deep, in turns, as lagwatch's watcher samples a stuck loop thread: signal
+ stack copy, unwind, Python frames read and merged; from another CPU and
from the sampled thread's own. Prints the medians and the ratio of Python
to C (and the merge in the sampler's CPU time too: on a busy machine the
wall time of a merge is mostly waiting for a CPU; and the same stack
merged again ten times, warm, in CPU time each), and checks that every
Python frame was found and that the C thread's samples have all their
frames and no Python frame. Beside the floor (a bare real-time signal to
the C thread, sent to handler entry, and the time its sending system call
takes to return), it prints lagwatch's checks before a signal, their ratio
to the floor, and their parts timed one after the other on the files the
watch keeps open (a descriptor check, the syscall file, sigaction, the
status file, its parse). Full runs also check the times: a whole Python
sample at most 20 us (like a native one: bench-overhead section 3) and
within x1.3 of the C one, the checks within 2 us, and a capture from the
thread's own CPU no slower than from another; the suite's --short run,
beside whatever else the machine does, reports them only.
"""
import ctypes
import sys
import threading

DEPTH = 20
BLOCK = 20  # samples of one thread before the other's turn
TIMES = ("checks", "delivery", "collect", "capture", "unwind", "merge", "merge_cpu", "merge_hot", "whole",
         "by_path", "part_fstat", "part_syscall", "part_sigaction", "part_status", "part_parse")
COUNTS = ("samples", "native", "merged", "python")
PLACES = ("from another CPU", "from its own CPU")
THREADS = ("Python", "C")
module = ctypes.CDLL(sys.argv[1])
module.lw_bench_python_finish.argtypes = (ctypes.c_int, ctypes.POINTER(ctypes.c_double),
                                          ctypes.POINTER(ctypes.c_int))
short = "--short" in sys.argv
blocks = 3 if short else 50
medians = (ctypes.c_double * (len(THREADS) * len(PLACES) * len(TIMES) + 2))()
counts = (ctypes.c_int * (len(THREADS) * len(PLACES) * len(COUNTS)))()
at_bottom = threading.Event()
turn_over = False  # the sampler took its block of the spinning main thread
sampler_gone = False


def spin(depth):
    if depth > 1:
        return spin(depth - 1) + 1
    at_bottom.set()
    while not turn_over and not sampler_gone:
        pass
    return 1


def sampler():
    """Takes the Python blocks, each once the main thread spins at the bottom."""
    global turn_over, sampler_gone
    try:
        for _ in range(blocks):
            for same_cpu in range(len(PLACES)):
                at_bottom.wait()
                at_bottom.clear()
                module.lw_bench_python_take(1, same_cpu, BLOCK)
                turn_over = True
    finally:
        sampler_gone = True


module.lw_bench_python_start()
thread = threading.Thread(target=sampler)
thread.start()
try:
    for _ in range(blocks):
        for same_cpu in range(len(PLACES)):
            turn_over = False
            module.lw_bench_python_adopt()
            spin(DEPTH)
            if not turn_over:
                raise SystemExit("the sampler failed")
            # The C thread's turn, this thread sampling it from C without the GIL.
            module.lw_bench_python_take(0, same_cpu, BLOCK)
finally:
    thread.join()
module.lw_bench_python_finish(blocks * BLOCK, medians, counts)

series = {}
for k, name in enumerate(THREADS):
    for p, place in enumerate(PLACES):
        i = k * len(PLACES) + p
        series[name, place] = (dict(zip(TIMES, medians[i * len(TIMES):(i + 1) * len(TIMES)])),
                               dict(zip(COUNTS, counts[i * len(COUNTS):(i + 1) * len(COUNTS)])))
bare = medians[len(THREADS) * len(PLACES) * len(TIMES)]
bare_send = medians[len(THREADS) * len(PLACES) * len(TIMES) + 1]
failures = 0


def verdict(ok, checked, text):
    global failures
    print("  %-9s %s" % ("(info)" if not checked else "[ok]" if ok else "[MISSED]", text))
    failures += checked and not ok


print("One sample of a thread stuck %d calls deep, Python beside C (CPython %d.%d; medians of %d "
      "samples each, 1 ms apart)" % (DEPTH, *sys.version_info[:2], blocks * BLOCK))
for place in PLACES:
    python, python_counts = series["Python", place]
    native, native_counts = series["C", place]
    if python_counts["samples"] == 0:
        print("  %s: no such CPU" % place)
        continue
    print("  sampled %s:" % place)
    for name, (times, frames) in (("Python", series["Python", place]), ("C", series["C", place])):
        print("    %-6s checks %.1f + signal and copy %.1f + collect %.1f = capture %.1f us; unwind "
              "of %d native frames %.1f us; Python frames read and merged %.1f us (CPU time %.1f us, again "
              "warm %.1f us; %d frames after); whole %.1f us"
              % (name, times["checks"], times["delivery"], times["collect"], times["capture"],
                 frames["native"], times["unwind"], times["merge"], times["merge_cpu"],
                 times["merge_hot"], frames["merged"], times["whole"]))
    ratio = python["whole"] / native["whole"] if native["whole"] > 0 else 0.0
    verdict(python["whole"] <= 20.0, not short,
            "a whole Python sample %.1f us (target <= 20 us), x%.2f the C one (%.1f us)"
            % (python["whole"], ratio, native["whole"]))
    verdict(ratio <= 1.3, not short,
            "a whole Python sample x%.2f the C one (target <= x1.3); capture x%.2f, merge %.1f us "
            "of the difference %.1f us"
            % (ratio, python["capture"] / native["capture"] if native["capture"] > 0 else 0.0,
               python["merge"] - native["merge"], python["whole"] - native["whole"]))
verdict(True, False, "a bare real-time signal to the C thread from another CPU, sent to handler "
        "entry: %.1f us (the floor under a signalled sample from there; its sending system call "
        "returns after %.1f us)" % (bare, bare_send))
for place in PLACES:
    times = series["C", place][0]
    if series["C", place][1]["samples"] == 0:
        continue
    parts = (times["part_fstat"], times["part_syscall"], times["part_sigaction"], times["part_status"],
             times["part_parse"])
    # A loop thread found running at the last look costs sigaction, one
    # descriptor check and its status file; the syscall file (and its own
    # check) only when it was not running then.
    verdict(times["checks"] <= 2.0, not short,
            "the C thread sampled %s: checks before the signal %.1f us (target <= 2 us), x%.2f the "
            "floor; their parts, one after the other after the same sleep: a descriptor check %.1f, "
            "the syscall file %.1f, sigaction %.1f, the status file %.1f, its parse %.1f us (a thread "
            "running at the last look: sigaction + one descriptor check + status file + parse = %.1f us)"
            % (place, times["checks"], times["checks"] / bare if bare > 0 else 0.0, *parts,
               parts[0] + parts[2] + parts[3] + parts[4]))
other, own = series["C", PLACES[0]][0], series["C", PLACES[1]][0]
place = PLACES[0] if series["C", PLACES[0]][1]["samples"] > 0 else PLACES[1]
verdict(series["C", place][0]["checks"] < series["C", place][0]["by_path"], not short,
        "lagwatch's checks before a signal %.1f us, one read of the thread's status file by path %.1f "
        "us (target: less: the loop thread's /proc files stay open)"
        % (series["C", place][0]["checks"], series["C", place][0]["by_path"]))
if series["C", PLACES[0]][1]["samples"] > 0:
    verdict(own["capture"] <= other["capture"], not short,
            "the C thread's capture from its own CPU %.1f us, from another %.1f us (target: no "
            "slower: the thread runs the handler as soon as the sampler waits)"
            % (own["capture"], other["capture"]))
# The frames: spin x DEPTH and <module>.
expected = DEPTH + 1
for place in PLACES:
    python_counts = series["Python", place][1]
    native_counts = series["C", place][1]
    if python_counts["samples"] == 0 and place == PLACES[0]:
        continue
    verdict(python_counts["samples"] > 0 and python_counts["python"] == expected, True,
            "sampled %s: %d Python frames in one sample (expected %d)"
            % (place, python_counts["python"], expected))
    verdict(native_counts["samples"] > 0 and native_counts["native"] >= DEPTH
            and native_counts["python"] == 0, True,
            "sampled %s: the C thread's sample has %d native frames (expected >= %d), %d Python "
            "frames (expected 0)" % (place, native_counts["native"], DEPTH, native_counts["python"]))
sys.exit(1 if failures else 0)
