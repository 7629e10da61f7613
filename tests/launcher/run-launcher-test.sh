#!/bin/sh
# run-launcher-test.sh LAUNCHER SLOW_CALLBACK_LIB
# The launcher against real programs: gtk4-widget-factory (unmodified) in a
# real X server with one slow callback added through the user's LD_PRELOAD;
# programs that never run a GLib loop; bad invocations.
set -u
launcher=$1
slowlib=$2
tmp=$(mktemp -d)
status=0
xvfb_pid=""
cleanup() { [ -n "$xvfb_pid" ] && kill "$xvfb_pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL $*"; status=1; }

# In an ASan build the preloaded library needs ASan's runtime loaded first;
# the launcher keeps the user's LD_PRELOAD, so this is also the place to
# show it does. The programs themselves are not instrumented: no leak check.
if [ -n "${LW_ASAN_RUNTIME:-}" ]; then
  export LD_PRELOAD="$LW_ASAN_RUNTIME"
  export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
fi
user_preload=${LD_PRELOAD:+$LD_PRELOAD }

# 1. Programs that never iterate a GLib loop: untouched, same exit status.
"$launcher" -- /bin/true || fail "/bin/true exit status $?"
"$launcher" -- /bin/false; [ $? -eq 1 ] || fail "/bin/false exit status"
"$launcher" -- sh -c 'exit 7'; [ $? -eq 7 ] || fail "sh -c 'exit 7' exit status"
threads=$("$launcher" -- sh -c 'ls /proc/$$/task | wc -l')
[ "$threads" -eq 1 ] || fail "a shell under the launcher has $threads threads (expected 1: nothing started)"
loaded=$("$launcher" -- sh -c 'grep -c liblagwatch-preload /proc/$$/maps')
[ "$loaded" -gt 0 ] || fail "the preload library is not loaded"
echo "ok no-loop programs: exit statuses kept, $threads thread, preload loaded"

# 2. Bad invocations.
"$launcher" --threshold abc -- /bin/true 2> "$tmp/err"; code=$?
[ $code -eq 2 ] && grep -q "threshold" "$tmp/err" || fail "bad --threshold: status $code, $(cat "$tmp/err")"
"$launcher" -- /nonexistent/program 2> "$tmp/err"; code=$?
[ $code -eq 127 ] && grep -q "cannot run '/nonexistent/program'" "$tmp/err" || fail "missing program: status $code"
for bad in /nonexistent/liblagwatch-preload.so /etc/passwd /tmp; do
  LAGWATCH_PRELOAD_LIBRARY=$bad "$launcher" -- /bin/true 2> "$tmp/err"; code=$?
  [ $code -eq 127 ] && grep -q "lagwatch: cannot preload '$bad'" "$tmp/err" ||
    fail "LAGWATCH_PRELOAD_LIBRARY=$bad: status $code, $(cat "$tmp/err") (the program must not run unwatched)"
done
echo "ok bad invocations"

# 3. gtk4-widget-factory, unmodified, in Xvfb.
factory=$(command -v gtk4-widget-factory)
[ -n "$factory" ] || { echo "FAIL gtk4-widget-factory not installed (package gtk-4-examples)"; exit 1; }
# Xvfb picks a free display itself and writes its number once it accepts
# connections: a number chosen here could be taken by another test's
# server in between.
Xvfb -displayfd 3 -screen 0 1280x800x24 -nolisten tcp 3> "$tmp/display" > "$tmp/xvfb.log" 2>&1 &
xvfb_pid=$!
deadline=$(( $(date +%s) + 60 ))
until [ -s "$tmp/display" ]; do
  kill -0 "$xvfb_pid" 2> /dev/null || { echo "FAIL Xvfb exited"; cat "$tmp/xvfb.log"; exit 1; }
  [ "$(date +%s)" -lt "$deadline" ] || { echo "FAIL Xvfb did not start in 60 s"; cat "$tmp/xvfb.log"; exit 1; }
  sleep 0.05
done
display=:$(cat "$tmp/display")

json="$tmp/lags.jsonl"
LD_PRELOAD="$user_preload$slowlib" LW_TEST_SLOW_MS=300 DISPLAY="$display" GDK_BACKEND=x11 \
  GSK_RENDERER=cairo NO_AT_BRIDGE=1 timeout 60 \
  "$launcher" --threshold 100 --output "json:$json,stderr" -- "$factory" > "$tmp/factory.log" 2>&1
code=$?
[ $code -eq 0 ] || { fail "widget factory under the launcher: exit status $code"; tail -20 "$tmp/factory.log"; }

slow='select(.source == "launcher-test: slow callback")'
count=$(jq -c "$slow" "$json" | wc -l)
if [ "$count" -ne 1 ]; then
  fail "expected one report for the slow callback, got $count of $(wc -l < "$json")"
# jq -e takes its exit status from the last input line only: the checks
# slurp the file, since other reports may follow the slow callback's.
elif ! jq -s -e "map($slow | .stack | map(.symbol) | index(\"launcher_test_slow_callback\") != null) == [true]" "$json" > /dev/null; then
  fail "the stack does not name the slow callback: $(jq -c "$slow | .stack | map(.symbol)" "$json")"
else
  duration=$(jq "$slow | .duration_ms" "$json")
  # The spin ends by the clock: the lag holds all 300 ms. A thread starved
  # of CPU (a loaded machine) sees the end late: 404.6 ms measured with
  # 41 ms on CPU, three GUI tests and a build beside it.
  if ! jq -s -e "map($slow | .duration_ms >= 299.9 and .duration_ms <= 800) == [true]" "$json" > /dev/null; then
    fail "duration $duration ms, not the 300 ms spin"
  else
    echo "ok gtk4-widget-factory: the slow callback named, $duration ms, phase $(jq -r "$slow | .phase" "$json"), $(jq "$slow | .samples" "$json") samples, $(wc -l < "$json") reports in all"
  fi
fi
exit $status
