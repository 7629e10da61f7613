"""check-offsets.py LW_PYTHON_C: lagwatch's CPython 3.11 layout table, checked on the running interpreter.

Reads the table lw_python_3_11 out of lib/lw-python.c (the offsets lagwatch
reads the interpreter's memory with) and checks every entry (TAP) against
the live objects of this interpreter, through ctypes: each offset must find
the field it names in a real runtime, thread state, frame, code object,
string, bytes, function and bound method. Run on /usr/bin/python3
(Debian's 3.11).
"""
import ctypes
import re
import sys
import threading

source = open(sys.argv[1], encoding="utf-8").read()
block = re.search(r"lw_python_3_11 = \{(.*?)\n\};", source, re.S).group(1)
table = {name: int(value, 0) for name, value in re.findall(r"\.(\w+) = (0x[0-9a-fA-F]+|\d+),", block)}
results = []
api = ctypes.pythonapi


def word(addr):
    return ctypes.c_void_p.from_address(addr).value or 0


def check(name, ok, detail=""):
    results.append((ok, "%s = %d %s" % (name, table[name], detail)))


class Widget:
    def method(self):
        pass


def inner_frame_checks():
    api.PyThreadState_Get.restype = ctypes.c_void_p
    tstate = api.PyThreadState_Get()
    # Read inline (ctypes' C methods push no Python frame): the current
    # frame is then this function's own.
    cframe = ctypes.c_void_p.from_address(tstate + table["tstate_cframe"]).value
    frame = ctypes.c_void_p.from_address(cframe + table["cframe_current_frame"]).value
    code = sys._getframe().f_code
    check("tstate_cframe", cframe != 0)
    check("cframe_current_frame", frame != 0)
    check("frame_code", word(frame + table["frame_code"]) == id(code), "(this function's code)")
    previous = word(frame + table["frame_previous"])
    check("frame_previous", word(previous + table["frame_code"]) == id(sys._getframe(1).f_code),
          "(the caller's frame)")
    prev_instr = word(frame + table["frame_prev_instr"])
    first = id(code) + table["code_code_adaptive"]
    check("frame_prev_instr", first <= prev_instr < first + len(code.co_code), "(inside this code)")
    entry = [ctypes.c_bool.from_address(f + table["frame_is_entry"]).value for f in (frame, previous)]
    check("frame_is_entry", entry == [False, False], "(Python-to-Python calls are not entries)")
    check("frame_size", table["frame_size"] > table["frame_is_entry"])


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
    check("code_code_adaptive", ctypes.string_at(id(code) + table["code_code_adaptive"], len(code.co_code))
          == code.co_code, "(a function never run is not specialised)")
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
