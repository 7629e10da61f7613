#!/bin/sh
# run-sysprof-test.sh READ_SYSCAP RESOLVE_SYSCAP WRITE_SYSCAP LAG_EXAMPLE LAUNCHER PYTHON_LAGGER PYTHON_LAGS GJS_LAGGER:
# lagwatch for Sysprof, read back with Sysprof's own reader (read-syscap,
# linked with libsysprof-capture) and named with Sysprof's own symbol
# resolution (resolve-syscap: libsysprof-6's document loader, else
# libsysprof-4's resolvers, else the capture's JITMAP records looked up as
# Sysprof does; its first line says which), TAP.
#
# 1. LAGWATCH_OUTPUT=syscap:FILE: the capture holds the process, its maps
#    (the program's among them), the build-ids as lagwatch metadata, one
#    "lagwatch" mark per lag of the JSON Lines file beside it (same duration),
#    and each lag's samples: as many as the record says, on its thread,
#    within the lag's mark. A PyGObject lag's mark names its Python
#    function, the summary's innermost program frame, not the C function
#    it spends its time in (zlib's deflate()).
#    A PyGObject program with a CPU lag (Python calling zlib) and a
#    sleeping one (time.sleep()): Sysprof names the Python handlers, through
#    the capture's JITMAP records, in the samples' stacks; no interpreter
#    tag of lagwatch's is left as an address; the sleeping lag's samples
#    are ones that entered the kernel (Sysprof's context marks: listed with
#    a context switch, "[sleeping]" under the kernel context), the CPU
#    lag's are not. A GJS program's lag: Sysprof names its JavaScript
#    handler the same way.
#    A made-up lag written by the sink (write-syscap), named the same way:
#    an interpreted frame, generated code named by a perf map (one JITMAP
#    address for two addresses of its code), a native frame; its sleeping
#    sample in the kernel with "[sleeping]", its CPU samples not.
# 2. Under sysprof-cli itself (Sysprof's recorder, which hands the program
#    SYSPROF_CONTROL_FD): every lag is a mark of group "lagwatch" in the
#    capture Sysprof wrote. Skipped when sysprof-cli is not installed.
#
# Every wait is on a condition with a deadline.
set -u
read_syscap=$1
resolve_syscap=$2
write_syscap=$3
lag_example=$4
launcher=$5
python_lagger=$6
python_lags=$7
gjs_lagger=$8
deadline_s=120

tmp=$(mktemp -d "${TMPDIR:-/tmp}/lagwatch-sysprof-test.XXXXXX")
recorder_pid=""
cleanup() {
  [ -z "$recorder_pid" ] || kill "$recorder_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

echo "1..10"
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
fail() { n=$((n + 1)); echo "not ok $n - $1"; }

# wait_until COMMAND...: runs COMMAND until it succeeds, at most deadline_s.
wait_until() {
  end=$(($(date +%s) + deadline_s))
  until "$@"; do
    [ "$(date +%s)" -lt "$end" ] || return 1
    sleep 0.1
  done
}

# 1. The capture file.
LAGWATCH_OUTPUT="syscap:$tmp/lags.syscap,json:$tmp/lags.jsonl" LAGWATCH_STATE_DIR="$tmp/state" \
  "$lag_example" > /dev/null 2> "$tmp/example.err"
status=$?
"$read_syscap" "$tmp/lags.syscap" > "$tmp/capture.txt" 2> "$tmp/read.err"
read_status=$?
if [ "$status" -eq 0 ] && [ "$read_status" -eq 0 ]; then
  ok "lag-example wrote a capture Sysprof's reader reads to its end"
else
  fail "lag-example wrote a capture Sysprof's reader reads to its end (exit $status, reader $read_status: $(cat "$tmp/read.err"))"
fi

pid=$(jq -r 'select(.event == "lag") | .pid' "$tmp/lags.jsonl" | head -n 1)
build_id=$(readelf -n "$lag_example" | sed -n 's/.*Build ID: //p')
if grep -q "^process $pid .*lag-example" "$tmp/capture.txt" \
   && grep -Eq "^map $pid [0-9a-f]+ [0-9a-f]+ .*/lag-example\$" "$tmp/capture.txt" \
   && awk '/^metadata .* lagwatch.build-ids$/ { on = 1; next } /^[a-z]/ { on = 0 } on' "$tmp/capture.txt" \
        | grep -q "/lag-example $build_id\$"; then
  ok "the capture has process $pid, lag-example's map and its build-id $build_id"
else
  fail "the capture has process $pid, lag-example's map and its build-id $build_id"
  grep -v '^sample' "$tmp/capture.txt" | head -n 40 | sed 's/^/# /'
fi

# Each lag: its mark (same duration within 0.1 ms) and its samples (count,
# thread, times within the mark).
if python3 - "$tmp/lags.jsonl" "$tmp/capture.txt" <<'PY'
import json, sys
lags = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
lags = [l for l in lags if l.get("event") == "lag"]
marks, samples = [], []
for line in open(sys.argv[2]):
    f = line.split()
    if f[0] == "mark" and f[4] == "lagwatch":
        marks.append((int(f[2]), int(f[3]), f[5]))
    elif f[0] == "sample":
        samples.append((int(f[2]), int(f[3]), int(f[4])))
if len(marks) != len(lags) or not lags:
    sys.exit("%d marks for %d lags" % (len(marks), len(lags)))
for lag, (start, duration, name) in zip(lags, marks):
    if name != "lag" or abs(duration / 1e6 - lag["duration_ms"]) > 0.1:
        sys.exit("lag %s: mark %s of %.3f ms, record %.3f ms" % (lag["id"], name, duration / 1e6, lag["duration_ms"]))
    inside = [s for s in samples if start <= s[1] <= start + duration]
    if len(inside) != lag["samples"] or any(s[0] != lag["thread_id"] or s[2] == 0 for s in inside):
        sys.exit("lag %s: %d samples inside its mark, the record says %d" % (lag["id"], len(inside), lag["samples"]))
if len(samples) != sum(l["samples"] for l in lags):
    sys.exit("%d samples in all, the records say %d" % (len(samples), sum(l["samples"] for l in lags)))
print("# %d lags, %d marks, %d samples" % (len(lags), len(marks), len(samples)))
PY
then
  ok "one mark per lag, with its duration; every sample on its thread, within its lag's mark"
else
  fail "one mark per lag, with its duration; every sample on its thread, within its lag's mark"
fi

# A path that is not ours is refused with a warning, and nothing else changes.
ln -s /etc/passwd "$tmp/link.syscap"
LAGWATCH_OUTPUT="syscap:$tmp/link.syscap,json:$tmp/refused.jsonl" LAGWATCH_STATE_DIR="$tmp/state" \
  "$lag_example" > /dev/null 2> "$tmp/refused.err"
if grep -q 'refusing\|cannot open.*symbolic link' "$tmp/refused.err" && [ -s "$tmp/refused.jsonl" ]; then
  ok "a symlink as the capture path is refused with a warning; the other sinks go on"
else
  fail "a symlink as the capture path is refused with a warning; the other sinks go on"
  sed 's/^/# /' "$tmp/refused.err" | head
fi

# A Python lag's mark: "callback zlib_handler: zlib_handler (300.2 ms)".
if /usr/bin/python3 -c 'import gi' 2> /dev/null; then
  env -u LAGWATCH_OUTPUT ${LW_ASAN_RUNTIME:+LD_PRELOAD=$LW_ASAN_RUNTIME} \
    ${LW_ASAN_RUNTIME:+ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0} \
    LW_TEST_REPORT_FILE="$tmp/python.jsonl" LAGWATCH_STATE_DIR="$tmp/state" \
    "$launcher" --output "syscap:$tmp/python.syscap,json:$tmp/python.jsonl" -- \
    /usr/bin/python3 "$python_lagger" zlib_handler > /dev/null 2> "$tmp/python.err"
  message=$("$read_syscap" "$tmp/python.syscap" 2>/dev/null | awk '$1 == "mark" && $5 == "lagwatch"' \
            | head -n 1 | cut -d' ' -f7-)
  case "$message" in
    "callback zlib_handler: zlib_handler ("*) ok "a Python lag's mark names its Python function: $message" ;;
    *) fail "a Python lag's mark names its Python function (got: $message)"
       sed 's/^/# /' "$tmp/python.err" | tail -n 20 ;;
  esac
else
  ok "# SKIP /usr/bin/python3 has no gi (package python3-gi)"
fi

# Python frames and sleeping samples, as Sysprof's reader names them.
if /usr/bin/python3 -c 'import gi' 2> /dev/null; then
  env -u LAGWATCH_OUTPUT ${LW_ASAN_RUNTIME:+LD_PRELOAD=$LW_ASAN_RUNTIME} \
    ${LW_ASAN_RUNTIME:+ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0} \
    LAGWATCH_STATE_DIR="$tmp/state" \
    "$launcher" --output "syscap:$tmp/lags.py.syscap,json:$tmp/lags.py.jsonl" -- \
    /usr/bin/python3 "$python_lags" "$tmp/lags.py.jsonl" > /dev/null 2> "$tmp/lags.py.err"
  "$read_syscap" "$tmp/lags.py.syscap" > "$tmp/lags.py.txt" 2>&1
  # No debuginfod look-ups from libsysprof-6's symbolizers.
  DEBUGINFOD_URLS= "$resolve_syscap" "$tmp/lags.py.syscap" > "$tmp/lags.py.resolved" 2> "$tmp/resolve.err"
  reader=$(sed -n '1s/^reader //p' "$tmp/lags.py.resolved")
  if python3 - "$tmp/lags.py.txt" "$tmp/lags.py.resolved" > "$tmp/lags.py.check" 2>&1 <<'PY'
import re, sys
capture, resolved = sys.argv[1], sys.argv[2]
marks, tags, jitmaps = {}, [], {}
for line in open(capture):
    f = line.split(" ")
    if f[0] == "mark" and f[4] == "lagwatch":
        for handler in ("compress_handler", "sleep_handler"):
            if handler in line:
                marks[handler] = (int(f[2]), int(f[2]) + int(f[3]))
    elif f[0] == "sample":
        # lagwatch's interpreter tags (top 24 bits set) but perf's context marks.
        tags += [a for a in f[6:] if a.strip().startswith("ffffff") and len(a.strip()) == 16
                 and int(a, 16) < 0xfffffffffffff000]
    elif f[0] == "jitmap":
        jitmaps[f[2]] = line.split(" ", 3)[3].strip()
samples, sample = [], None
for line in open(resolved):
    if line.startswith("sample "):
        f = line.split()
        sample = {"time": int(f[2]), "context": f[3], "names": []}
        samples.append(sample)
    elif line.startswith("  ") and sample is not None:
        sample["names"].append(line.strip())
for handler in ("compress_handler", "sleep_handler"):
    if handler not in marks:
        sys.exit("no lagwatch mark names %s: %s" % (handler, sorted(marks)))
if tags:
    sys.exit("interpreter tags left as addresses in the samples: %s" % tags[:5])
named = re.compile(r"^%s \(.*/python-lags\.py:[0-9]+\)$")
def in_lag(handler):
    start, end = marks[handler]
    return [s for s in samples if start <= s["time"] <= end]
def naming(handler, ss):
    return [s for s in ss if any(re.match(named.pattern % handler, n) for n in s["names"])]
cpu, asleep = in_lag("compress_handler"), in_lag("sleep_handler")
cpu_named = naming("compress_handler", [s for s in cpu if s["context"] == "user"])
if not cpu_named:
    sys.exit("no CPU sample of the compress lag (%d samples) names compress_handler; JITMAP: %s; first: %s"
             % (len(cpu), sorted(jitmaps.values())[:8], cpu[0]["names"] if cpu else None))
# The Python handler is an outer frame of the native code it called.
names = cpu_named[0]["names"]
at = [i for i, n in enumerate(names) if n.startswith("compress_handler (")][0]
if at == 0:
    sys.exit("compress_handler is the innermost frame: %s" % names)
if len([s for s in cpu if s["context"] == "kernel"]) * 2 > len(cpu):
    sys.exit("most of the CPU lag's samples read as sleeping: %s" % [s["context"] for s in cpu])
slept = naming("sleep_handler", [s for s in asleep if s["context"] == "kernel"])
if not slept:
    sys.exit("no sample of the sleeping lag (%d: %s) is a kernel one naming sleep_handler"
             % (len(asleep), [(s["context"], s["names"][:4]) for s in asleep][:4]))
kernel_first = [s for s in slept if "[sleeping]" not in s["names"]]
if kernel_first:
    sys.exit("a sleeping sample without its [sleeping] frame: %s" % kernel_first[0]["names"])
print("# %s; %d samples in the CPU lag (%d named), %d in the sleeping one (%d in the kernel); a CPU stack: %s; "
      "a sleeping one: %s" % (open(resolved).readline().strip(), len(cpu), len(cpu_named), len(asleep), len(slept),
                               " <- ".join(names[:at + 1]), " <- ".join(slept[0]["names"][:6])))
PY
  then
    ok "Sysprof ($reader) names Python frames through JITMAP records; sleeping samples are kernel ones, CPU ones are not"
    sed 's/^/# /' "$tmp/lags.py.check"
  else
    fail "Sysprof ($reader) names Python frames through JITMAP records; sleeping samples are kernel ones, CPU ones are not"
    sed 's/^/# /' "$tmp/lags.py.check" "$tmp/resolve.err"
    sed 's/^/# /' "$tmp/lags.py.err" | tail -n 20
  fi
  if grep -Eq '^jitmap [0-9]+ e0000000[0-9a-f]{8} compress_handler \(.*/python-lags\.py:[0-9]+\)$' "$tmp/lags.py.txt" \
     && ! grep '^jitmap' "$tmp/capture.txt" | grep -qv ' \[sleeping\]$'; then
    ok "the capture's JITMAP maps Sysprof's JIT addresses to \"function (file:line)\"; a C program's has \"[sleeping]\" only"
  else
    fail "the capture's JITMAP maps Sysprof's JIT addresses to \"function (file:line)\"; a C program's has \"[sleeping]\" only"
    grep '^jitmap' "$tmp/lags.py.txt" "$tmp/capture.txt" | head -n 10 | sed 's/^/# /'
  fi
else
  ok "# SKIP /usr/bin/python3 has no gi (package python3-gi)"
  ok "# SKIP /usr/bin/python3 has no gi (package python3-gi)"
fi

# A JavaScript lag: jsSlowHandler spins in JavaScript, called from GLib.
if command -v gjs > /dev/null; then
  env -u LAGWATCH_OUTPUT ${LW_ASAN_RUNTIME:+LD_PRELOAD=$LW_ASAN_RUNTIME} \
    ${LW_ASAN_RUNTIME:+ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0} \
    LW_TEST_REPORT_FILE="$tmp/js.jsonl" LAGWATCH_STATE_DIR="$tmp/state" \
    "$launcher" --output "syscap:$tmp/js.syscap,json:$tmp/js.jsonl" -- gjs "$gjs_lagger" > /dev/null 2> "$tmp/js.err"
  DEBUGINFOD_URLS= "$resolve_syscap" "$tmp/js.syscap" > "$tmp/js.resolved" 2>> "$tmp/js.err"
  named=$(grep -E '^  jsSlowHandler \(.*/loop-run\.js:[0-9]+\)$' "$tmp/js.resolved" | head -n 1 | sed "s/^ *//")
  if [ -n "$named" ]; then
    ok "Sysprof ($(sed -n '1s/^reader //p' "$tmp/js.resolved")) names a JavaScript handler through JITMAP records: $named"
  else
    fail "Sysprof names a JavaScript handler through JITMAP records"
    grep -v '^sample' "$tmp/js.resolved" | sort | uniq -c | sort -rn | head -n 12 | sed 's/^/# /'
    sed 's/^/# /' "$tmp/js.err" | tail -n 10
  fi
else
  ok "# SKIP gjs is not installed (Debian package gjs)"
fi

# A made-up lag, every kind of frame the sink maps (see write-syscap.c).
"$write_syscap" "$tmp/made-up.syscap" > "$tmp/made-up.txt" 2> "$tmp/made-up.err"
"$read_syscap" "$tmp/made-up.syscap" >> "$tmp/made-up.txt" 2>&1
DEBUGINFOD_URLS= "$resolve_syscap" "$tmp/made-up.syscap" > "$tmp/made-up.resolved" 2>> "$tmp/made-up.err"
if python3 - "$tmp/made-up.txt" "$tmp/made-up.resolved" > "$tmp/made-up.check" 2>&1 <<'PY'
import sys
written, resolved = sys.argv[1], sys.argv[2]
times, addrs = {}, []
for line in open(written):
    f = line.split()
    if f[0] == "time":
        times[int(f[2])] = int(f[1])
    elif f[0] == "sample":
        addrs.append([int(a, 16) for a in f[5:]])
reader = open(resolved).readline().split()[1]
samples, sample = {}, None
for line in open(resolved):
    if line.startswith("sample "):
        f = line.split()
        sample = samples.setdefault(times.get(int(f[2])), {"context": f[3], "names": []})
    elif line.startswith("  ") and sample is not None:
        sample["names"].append(line.strip())
if sorted(k for k in samples if k) != [1, 2, 3]:
    sys.exit("the samples read back are not the 3 written: %s" % sorted(samples, key=str))
interpreted_jit = ["handler (/app/app.py:12)", "jit_leaf", "main (/app/app.py:40)"]
native = "write_syscap_native_leaf"
first, asleep, third = samples[1], samples[2], samples[3]
def leaf_ok(names):
    # The jitmap reader has no ELF resolution: the native leaf stays an address.
    return names[0] == native if reader != "jitmap" else names[0].startswith("0x")
if first["context"] != "user" or first["names"][1:4] != interpreted_jit or not leaf_ok(first["names"]):
    sys.exit("CPU sample 1: %s %s" % (first["context"], first["names"]))
if (asleep["context"] != "kernel" or asleep["names"][0].lower() != "- - kernel - -"
        or asleep["names"][1] != "[sleeping]" or asleep["names"][3:6] != interpreted_jit
        or not leaf_ok(asleep["names"][2:])):
    sys.exit("sleeping sample 2: %s %s" % (asleep["context"], asleep["names"]))
if third["context"] != "user" or third["names"] != ["jit_leaf"]:
    sys.exit("CPU sample 3: %s %s" % (third["context"], third["names"]))
# One JITMAP address for the two addresses of jit_leaf's code.
if addrs[0][2] != addrs[2][0]:
    sys.exit("jit_leaf has two addresses in the capture: %x, %x" % (addrs[0][2], addrs[2][0]))
print("# %s: %s / %s / %s" % (reader, " <- ".join(first["names"]), " <- ".join(asleep["names"]),
                              " <- ".join(third["names"])))
PY
then
  ok "a made-up lag's frames as Sysprof names them: native, Python, generated code; its sleeping sample in the kernel"
  sed 's/^/# /' "$tmp/made-up.check"
else
  fail "a made-up lag's frames as Sysprof names them: native, Python, generated code; its sleeping sample in the kernel"
  sed 's/^/# /' "$tmp/made-up.check" "$tmp/made-up.err"
fi

# 2. Under Sysprof's recorder.
if ! command -v sysprof-cli > /dev/null; then
  echo "ok 10 # SKIP sysprof-cli is not installed (Debian package sysprof)"
  exit 0
fi
# From Sysprof 48 on, sysprof-cli records through sysprofd on the system
# bus, even with --no-perf; without one it writes an empty capture.
sysprof_major=$(sysprof-cli --version 2>/dev/null | sed -n 's/^[^0-9]*\([0-9][0-9]*\)\..*/\1/p' | head -n 1)
if [ "${sysprof_major:-0}" -ge 48 ] && [ ! -S /run/dbus/system_bus_socket ]; then
  echo "ok 10 # SKIP sysprof-cli $sysprof_major records through sysprofd on the system bus, and there is none here (/run/dbus/system_bus_socket)"
  exit 0
fi
LAGWATCH_OUTPUT="json:$tmp/recorded.jsonl" LAGWATCH_STATE_DIR="$tmp/state" \
  sysprof-cli --no-perf --no-battery --no-cpu --no-disk --no-memory --no-network --no-decode \
  -f "$tmp/recorded.syscap" -- "$lag_example" > "$tmp/recorder.out" 2>&1 &
recorder_pid=$!
# lag-example ends after its three lags; sysprof-cli records until told to stop.
three_lags() { [ "$(jq -R -c 'fromjson? | select(.event == "lag")' "$tmp/recorded.jsonl" 2>/dev/null | wc -l)" -ge 3 ]; }
example_gone() { ! pgrep -P "$recorder_pid" -x lag-example > /dev/null; }
recorder_gone() { ! kill -0 "$recorder_pid" 2>/dev/null; }
if wait_until three_lags && wait_until example_gone; then
  # sysprof-cli stops at the first interrupt, but waits for its sources
  # (here without a system bus: for ever); two more make it write the
  # capture as it stands and exit. Interrupts sent while one is still
  # pending would merge into one: the next goes once it was delivered.
  interrupt_until_gone() {
    recorder_gone && return 0
    if ! grep -Eq '^ShdPnd:.*[2367abef]$' "/proc/$recorder_pid/status" 2>/dev/null; then
      kill -INT "$recorder_pid" 2>/dev/null
    fi
    return 1
  }
  wait_until interrupt_until_gone
fi
recorder_pid=""
marks=$("$read_syscap" "$tmp/recorded.syscap" 2>/dev/null | awk '$1 == "mark" && $5 == "lagwatch"' | wc -l)
lags=$(jq -c 'select(.event == "lag")' "$tmp/recorded.jsonl" 2>/dev/null | wc -l)
if [ "$lags" -ge 3 ] && [ "$marks" -eq "$lags" ]; then
  ok "under sysprof-cli, each of the $lags lags is a lagwatch mark in Sysprof's own capture"
else
  fail "under sysprof-cli, each lag is a lagwatch mark in Sysprof's own capture ($marks marks, $lags lags)"
  sed 's/^/# /' "$tmp/recorder.out" | tail -n 20
fi
