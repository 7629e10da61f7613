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
times="$tmp/times"
LD_PRELOAD="$user_preload$slowlib" LW_TEST_SLOW_MS=300 LW_TEST_SLOW_TIMES="$times" DISPLAY="$display" GDK_BACKEND=x11 \
  GSK_RENDERER=cairo NO_AT_BRIDGE=1 timeout 60 \
  "$launcher" --threshold 100 --output "json:$json,stderr" -- "$factory" > "$tmp/factory.log" 2>&1
code=$?
[ $code -eq 0 ] || { fail "widget factory under the launcher: exit status $code"; tail -20 "$tmp/factory.log"; }

# The slow callback's lag is the one its GSource names. On a loaded machine
# the same dispatch may also run GTK's own sources (an X round trip that
# waits for a starved Xvfb), and their samples may outweigh the spin's: a
# thread that sleeps is sampled by wall time, one that runs by CPU time.
# The spin is 300 ms of CPU time (about 30 samples), but an X server
# starved for longer still outweighs it. So the spin must be one of the
# lag's stacks, not necessarily the heaviest (which stack is heaviest is
# test-diagnose's business).
# (A "hang" record, written once a lag lasts 2 s, as a heavily loaded
# machine makes the spin do, is an early copy of the same lag.)
slow='select(.event == "lag" and .source == "launcher-test: slow callback")'
spin_stack='[.stacks[].stack | map(.symbol) | index("launcher_test_spin") as $spin
             | index("launcher_test_slow_callback") as $callback
             | $spin != null and $callback != null and $spin < $callback] | any'
time_ms='(.time[0:19] + "Z" | fromdate) * 1000 + (.time[20:23] | tonumber)'
count=$(jq -c "$slow" "$json" | wc -l)
if [ "$count" -ne 1 ]; then
  fail "expected one report for the slow callback, got $count of $(wc -l < "$json")"
# jq -e takes its exit status from the last input line only: the checks
# slurp the file, since other reports may follow the slow callback's.
elif ! jq -s -e "map($slow | $spin_stack) == [true]" "$json" > /dev/null; then
  fail "no stack of the slow callback's lag names the spin in the callback: $(jq -c "$slow | [.stacks[] | {samples, stack: (.stack | map(.symbol))}]" "$json")"
else
  duration=$(jq "$slow | .duration_ms" "$json")
  spin_start=$(awk '$1 == "spin_start" { printf "%.3f", $2 / 1000 }' "$times")
  spin_end=$(awk '$1 == "spin_end" { printf "%.3f", $2 / 1000 }' "$times")
  quit=$(awk '$1 == "quit" { printf "%.3f", $2 / 1000 }' "$times")
  # The lag holds the whole spin, whatever the load: it starts before the
  # spin's start and ends after its end, and it is over before the quit
  # callback, which runs in a later iteration (300 ms after the spin, in
  # its own dispatch). The report's "time" has millisecond precision and
  # the times are read on either side of a clock conversion: 1 ms of slack.
  # A lag measured from the wrong start or to the wrong end fails.
  if ! jq -s -e "map($slow | .complete
                 and ($time_ms) <= $spin_start + 1
                 and ($time_ms) + .duration_ms >= $spin_end - 1
                 and ($time_ms) + .duration_ms <= $quit + 1
                 and .duration_ms >= 299.9) == [true]" "$json" > /dev/null; then
    fail "the lag ($(jq -c "$slow | {time, duration_ms, complete}" "$json")) does not hold the spin (from $spin_start to $spin_end ms, quit at $quit ms)"
  else
    heaviest=$(jq -r "$slow | if (.stack | map(.symbol) | index(\"launcher_test_spin\")) != null then \"the spin\" else \"another stack\" end" "$json")
    echo "ok gtk4-widget-factory: the slow callback named, $duration ms, phase $(jq -r "$slow | .phase" "$json"), $(jq "$slow | .samples" "$json") samples (heaviest: $heaviest), $(wc -l < "$json") reports in all"
  fi
fi
exit $status
