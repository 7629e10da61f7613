"""check-reuse.py SAMPLER: a code object freed and another made at its address is named afresh.

lagwatch keeps what it read of a code object (its name, file, line table)
from sample to sample, by the object's address. The main thread runs a
function whose code object is named stale_N until the sampler (SAMPLER,
python-sampler.c, one reader kept from call to call) has sampled it; then
that code object is freed with its name and another, the same but named
fresh_N, is made until CPython puts it at the freed one's address (from
3.13 its name usually lands at the freed name's address too, so every
field of the new code object equals the old one's but its co_version);
the main thread runs it and the same reader samples it again. Checks
(TAP) that the second samples name fresh_N and never stale_N: a cache
that trusted the address, or the addresses of the objects the code
object refers to, would name the new code object after the old one. A
run where CPython never reused the address is a visible skip.
"""
import ctypes
import gc
import sys
import threading
import types

sys.dont_write_bytecode = True  # imports below write nothing into the source tree
from asan_reexec import reexec  # noqa: E402

reexec()

sampler = ctypes.CDLL(sys.argv[1])
SAMPLES = 20
TRIES = 50  # code objects made for one freed, waiting for its address
ROUNDS = 3
ATTEMPTS = 10  # calls of SAMPLES samples, until one holds Python frames
# Names of a length no other string here has: a size of block that only
# they use, so a name freed is the one CPython hands out next.
PAD = "_" * 150
ready = threading.Event()
done = [False]
out = {}


def template():
    ready.set()
    while not done[0]:
        pass


def sample(tid):
    """The sampler thread: once the main thread spins, samples it, then lets it return."""
    buf = ctypes.create_string_buffer(1 << 20)
    try:
        ready.wait()
        # On a loaded machine a capture can time out: sample again, the
        # thread still spinning, until some samples were taken.
        for _ in range(ATTEMPTS):
            out["with_python"] = sampler.lw_test_python_sample_kept(tid, SAMPLES, buf, len(buf))
            if out["with_python"] != 0:
                break
        out["frames"] = [line.split("\t") for line in buf.value.decode().splitlines()]
    finally:
        done[0] = True


def run(code):
    """Runs @code's function on this thread until the sampler sampled it; its Python frames."""
    ready.clear()
    done[0] = False
    out.clear()
    function = types.FunctionType(code, globals())
    thread = threading.Thread(target=sample, args=(threading.get_native_id(),))
    thread.start()
    function()
    thread.join()
    return out.get("with_python", 0), out.get("frames", [])


def named(code, *parts):
    """A copy of @code named by @parts joined (a string made now, referred to by
    the copy alone): the same size, made without compiling."""
    name = "".join(parts)
    return code.replace(co_name=name, co_qualname=name)


results = []
reused = names_reused = 0
for round_ in range(ROUNDS):
    stale, fresh = "stale_%d%s" % (round_, PAD), "fresh_%d%s" % (round_, PAD)
    code = named(template.__code__, "stale_", str(round_), PAD)
    address, name_address = id(code), id(code.co_qualname)
    with_python, frames = run(code)
    innermost = [f[0] for f in frames if f[0] in (stale, fresh)]
    results.append((with_python > 0 and innermost and set(innermost) == {stale},
                    "round %d: the first code object is named stale_%d in %d samples with Python frames"
                    % (round_, round_, with_python)))
    # The sampling's garbage first, so that the code object and its name are
    # the blocks freed last, the first CPython hands out again.
    gc.collect()
    del code
    # Best with the name at the old name's address too; else the code object alone.
    for both in (True, False):
        for _ in range(TRIES):
            code = named(template.__code__, "fresh_", str(round_), PAD)
            if id(code) == address and (id(code.co_qualname) == name_address or not both):
                break
            del code
            code = None
        if code is not None:
            break
    if code is None:
        print("# round %d: no code object made at the freed one's address in %d tries" % (round_, TRIES))
        continue
    reused += 1
    names_reused += id(code.co_qualname) == name_address
    with_python, frames = run(code)
    names = sorted({f[0] for f in frames if f[0] in (stale, fresh)})
    results.append((with_python > 0 and names == [fresh],
                    "round %d: the code object made at the freed one's address is named fresh_%d (seen: %s)"
                    % (round_, round_, [name.rstrip("_") for name in names])))
    del code

print("1..%d" % (len(results) + 1))
for number, (ok, what) in enumerate(results, 1):
    print("%s %d - %s" % ("ok" if ok else "not ok", number, what))
if reused:
    print("ok %d - a freed code object's address was reused in %d of %d rounds (its name's too in %d)"
          % (len(results) + 1, reused, ROUNDS, names_reused))
else:
    print("ok %d # SKIP CPython reused no freed code object's address here" % (len(results) + 1))
sampler.lw_test_python_sample_kept_free()
sys.exit(0 if all(ok for ok, _ in results) else 1)
