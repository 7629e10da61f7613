"""check-offsets.py SAMPLER: lagwatch's layout of the running CPython, checked on its live objects.

SAMPLER (python-sampler.c, loaded with ctypes) gives the layout lagwatch
reads this interpreter with, found as lagwatch finds it: parsed from the
interpreter's own _Py_DebugOffsets (3.13+), else its version's table (3.11,
3.12). Every entry is checked (TAP) against the live objects of this
interpreter through ctypes: each offset must find the field it names in a
real runtime, thread state, frame, code object, string, bytes, function and
bound method. An interpreter lagwatch does not read (older than 3.11, a
version it does not know, a free-threaded build) is a visible skip.
Run on /usr/bin/python3 by the suite, and on every CPython of this machine
by run-ctypes-lags.py.
"""
import ctypes
import dis
import sys
import threading

sys.dont_write_bytecode = True  # imports below write nothing into the source tree
from asan_reexec import reexec  # noqa: E402

reexec()

try:
    sampler = ctypes.CDLL(sys.argv[1])
except OSError as error:
    print("1..0 # SKIP the sampler module cannot be loaded here: %s" % error)
    sys.exit(0)
buf = ctypes.create_string_buffer(1 << 16)
status = sampler.lw_test_python_layout(buf, len(buf))
if status != 1:
    print("1..0 # SKIP lagwatch does not read CPython %d.%d: %s"
          % (sys.version_info[0], sys.version_info[1], buf.value.decode(errors="replace")))
    sys.exit(0)
table = {name: int(value) for name, value in (line.split() for line in buf.value.decode().splitlines())}
results = []
api = ctypes.pythonapi
SHIM = 3  # a shim frame's owner, 3.12 to 3.14


def word(addr):
    return ctypes.c_void_p.from_address(addr).value or 0


def byte(addr):
    return ctypes.c_uint8.from_address(addr).value


def check(name, ok, detail=""):
    results.append((ok, "%s = %d %s" % (name, table[name], detail)))


class Widget:
    def method(self):
        pass


def frame_code(frame):
    code = word(frame + table["frame_code"])
    return code & ~3 if table["code_tagged"] else code


def inner_frame_checks():
    api.PyThreadState_Get.restype = ctypes.c_void_p
    tstate = api.PyThreadState_Get()
    # Read inline (ctypes' C methods push no Python frame): the current
    # frame is then this function's own.
    at = ctypes.c_void_p.from_address(tstate + table["tstate_frame"]).value
    frame = ctypes.c_void_p.from_address(at + table["cframe_current_frame"]).value if table["has_cframe"] else at
    code = sys._getframe().f_code
    check("tstate_frame", frame != 0)
    check("has_cframe", table["has_cframe"] == (sys.version_info < (3, 13)), "(3.11 and 3.12 have a _PyCFrame)")
    check("cframe_current_frame", frame != 0)
    check("frame_code", frame_code(frame) == id(code), "(this function's code)")
    check("code_tagged", table["code_tagged"] == (sys.version_info >= (3, 14)), "(3.14's f_executable is tagged)")
    previous = word(frame + table["frame_previous"])
    check("frame_previous", frame_code(previous) == id(sys._getframe(1).f_code), "(the caller's frame)")
    instr = word(frame + table["frame_instr"])
    first = id(code) + table["code_code_adaptive"]
    check("frame_instr", first <= instr < first + len(code.co_code), "(inside this code)")
    owners, last = [], 0  # the chain's owners and last frame, read with shims
    if table["entry"] == 0:
        entry = [byte(f + table["frame_is_entry"]) for f in (frame, previous)]
        check("frame_is_entry", entry == [0, 0], "(Python-to-Python calls are not entries)")
        check("frame_owner", True, "(not read with is_entry)")
        check("entry", sys.version_info < (3, 12), "(is_entry: 3.11)")
    else:
        at = frame
        while at and len(owners) < 1000:
            owners.append(byte(at + table["frame_owner"]))
            last, at = at, word(at + table["frame_previous"])
        check("frame_owner", owners[:2] == [0, 0] and owners[-1] == SHIM,
              "(this frame and its caller are the thread's, the outermost is a shim: %s)" % owners[-8:])
        check("frame_is_entry", True, "(not read with shims)")
        check("entry", sys.version_info >= (3, 12), "(shims: 3.12+)")
    # 3.15+: the chain ends in the thread's base frame, a second shim (the
    # thread state points to it), below the one of the loop that ran the
    # outermost code.
    check("has_base_frame", table["has_base_frame"] == (sys.version_info >= (3, 15)),
          "(3.15+: the thread state points to a base frame)")
    if table["has_base_frame"]:
        check("tstate_base_frame", last == word(tstate + table["tstate_base_frame"])
              and owners[-2:] == [SHIM, SHIM], "(the chain's last frame, a shim below the loop's shim)")
    else:
        check("tstate_base_frame", table["tstate_base_frame"] == 0, "(none)")
    check("frame_read", table["frame_read"] > max(table["frame_previous"], table["frame_code"],
                                                  table["frame_instr"], table["frame_owner"]))


def main():
    api.PyInterpreterState_Get.restype = ctypes.c_void_p
    api.PyThreadState_Get.restype = ctypes.c_void_p
    runtime = ctypes.addressof(ctypes.c_char.in_dll(api, "_PyRuntime"))
    interp = api.PyInterpreterState_Get()
    tstate = api.PyThreadState_Get()
    check("runtime_interpreters_head", word(runtime + table["runtime_interpreters_head"]) == interp)
    check("interp_next", word(interp + table["interp_next"]) == 0, "(one interpreter)")
    seen = []
    other = threading.Thread(target=lambda: seen.append(api.PyThreadState_Get()))
    other.start()
    other.join()
    head = word(interp + table["interp_threads_head"])
    check("interp_threads_head", head != 0)
    states, at = [], head
    while at and len(states) < 100:
        states.append(at)
        at = word(at + table["tstate_next"])
    check("tstate_next", tstate in states, "(reaches this thread's state)")
    check("tstate_native_thread_id",
          ctypes.c_ulong.from_address(tstate + table["tstate_native_thread_id"]).value
          == threading.get_native_id())
    inner_frame_checks()

    text = "lagwatch_ascii"
    check("object_type", word(id(text) + table["object_type"]) == id(str))
    check("unicode_length", word(id(text) + table["unicode_length"]) == len(text))
    state = ctypes.c_uint32.from_address(id(text) + table["unicode_state"]).value
    check("unicode_state", (state >> 5) & 3 == 3, "(compact, ascii)")
    check("ascii_size", ctypes.string_at(id(text) + table["ascii_size"], len(text)) == text.encode())
    wide = "lagwatch_\u00e9t\u00e9_" + str(len(sys.argv))
    check("compact_size", ctypes.string_at(id(wide) + table["compact_size"], len(wide)) == wide.encode("latin-1")
          and word(id(wide) + table["compact_utf8"]) == 0, "(Latin-1 code units, no UTF-8 form yet)")
    api.PyUnicode_AsUTF8.restype = ctypes.c_void_p
    api.PyUnicode_AsUTF8.argtypes = [ctypes.py_object]
    api.PyUnicode_AsUTF8(wide)
    utf8 = wide.encode()
    check("compact_utf8_length", word(id(wide) + table["compact_utf8_length"]) == len(utf8))
    check("compact_utf8", ctypes.string_at(word(id(wide) + table["compact_utf8"]), len(utf8)) == utf8)
    data = b"lagwatch\x00bytes"
    check("var_size", word(id(data) + table["var_size"]) == len(data))
    check("bytes_data", ctypes.string_at(id(data) + table["bytes_data"], len(data)) == data)

    code = Widget.method.__code__  # never run; its qualname differs from its name
    check("code_firstlineno", ctypes.c_int.from_address(id(code) + table["code_firstlineno"]).value
          == code.co_firstlineno)
    check("code_filename", word(id(code) + table["code_filename"]) == id(code.co_filename))
    check("code_qualname", word(id(code) + table["code_qualname"]) == id(code.co_qualname))
    check("code_linetable", word(id(code) + table["code_linetable"]) == id(code.co_linetable))
    # Its instructions as co_code has them; the inline cache entries
    # (CACHE, 0) between them hold counters the interpreter sets when it
    # makes the code object (3.14: some, 3.15: RESUME's too).
    adaptive = ctypes.string_at(id(code) + table["code_code_adaptive"], len(code.co_code))
    units = range(0, len(code.co_code), 2)
    cache = dis.opmap["CACHE"]
    check("code_code_adaptive", [adaptive[i:i + 2] for i in units if code.co_code[i] != cache]
          == [code.co_code[i:i + 2] for i in units if code.co_code[i] != cache],
          "(a function never run is not specialised: its instructions, caches aside)")
    check("function_qualname", word(id(Widget.method) + table["function_qualname"])
          == id(Widget.method.__qualname__))
    bound = Widget().method
    check("method_function", word(id(bound) + table["method_function"]) == id(bound.__func__))
    check("version", table["version"] == sys.version_info[0] << 8 | sys.version_info[1],
          "(this interpreter is %d.%d)" % sys.version_info[:2])

    missing = set(table) - {what.split(" = ")[0] for _, what in results}
    results.append((not missing, "every entry of the table was checked (unchecked: %s)" % sorted(missing)))
    print("1..%d" % len(results))
    for number, (ok, what) in enumerate(results, 1):
        print("%s %d - %s" % ("ok" if ok else "not ok", number, what))


main()
