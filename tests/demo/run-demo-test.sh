#!/bin/sh
# run-demo-test.sh DEMO OUTDIR: the GTK 4 demo on its own Xvfb, driven with
# xdotool as a user would, checked from outside (TAP).
#
# For each freeze (Ctrl+1 busy, Ctrl+2 sleep, Ctrl+6 slow timer; 400 ms,
# threshold 100 ms) the checks are:
#   - the demo printed the report on stdout: it does so only in the main
#     thread function that lagwatch's report callback hands the report to,
#     right after putting it in the list;
#   - the list was painted with that report's row in it (the demo's
#     "list: N rows: ID ..." line, printed after the frame), and the window
#     title, read from the X server, counts the same rows;
#   - the report names the freeze's function, its duration is 400 to 800 ms,
#     and the thread's state when caught is right (running, or sleeping in
#     clock_nanosleep), both in the text and in the JSON Lines record with
#     the same id (LAGWATCH_OUTPUT=json:, lagwatch's own sink). The CPU share
#     of a busy freeze is not checked: on a loaded machine the spinning thread
#     gets less than all of a CPU, and the report rightly says so.
# The busy freeze's report counts the frames the demo's window missed: its
# duration over the refresh interval GDK reported, ± 2 (text and JSON).
# Ctrl+7 (stutter: 30-60 ms busy periods for 2 s, after the save: a lag it
# makes on a loaded machine may have no stack) must end ("stutter:" line)
# with none of them reported as a lag (GSource "demo: stutter"), checked once
# the demo has exited and every report is written.
# The busy freeze's flame graph (the newest lag is selected, so drawn) must
# hold every sample and have demo_freeze_busy as its widest program box, in
# view at the window's default size: the demo's "flame:" line, printed at
# the graph's first drawing at its own height, computed from the scrolling
# the window has then. In its call
# timeline demo_freeze_busy must be the busiest call, the one that ran
# longest outside the calls it made (the "calls:" line, printed at the
# timeline's first drawing; not the deepest call: on a loaded machine a
# write to the X server after the freeze returned can be deeper). Ctrl+S saves
# the session's reports (--save-reports: no file chooser): every lag record
# of the JSON sink must be in the saved file, as a JSON line with its stacks.
# Then a screenshot of the window goes to OUTDIR/demo-test.png, and Ctrl+Q
# must end the demo with status 0 and no lagwatch warning.
#
# The latency chart must show the freezes: a "chart:" line (printed
# when the chart, refreshed each second from lagwatch_get_stats(), shows new
# counts) with lags and a busy period in the bucket from 250 ms; and the
# "stats" event written at exit must count the three lags.
#
# Every wait is on a condition with a deadline; the 50 ms pauses only pace
# the polling.
set -eu

for tool in Xvfb xauth mcookie xdotool import identify jq; do
  if ! command -v "$tool" > /dev/null; then
    echo "1..0 # SKIP $tool is not installed (scripts/setup-and-test installs what is missing)"
    exit 0
  fi
done

demo=$1
screenshot=$2/demo-test.png
deadline_s=30

tmp=$(mktemp -d "${TMPDIR:-/tmp}/lagwatch-demo-test.XXXXXX")
xvfb_pid=""
demo_pid=""
cleanup() {
  [ -z "$demo_pid" ] || kill "$demo_pid" 2>/dev/null || true
  [ -z "$xvfb_pid" ] || kill "$xvfb_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

n=0
ok() {
  n=$((n + 1))
  echo "ok $n - $1"
}
# fail DESCRIPTION: reports the failed check with the demo's output, stops.
fail() {
  n=$((n + 1))
  echo "not ok $n - $1"
  for log in stdout stderr xvfb.log; do
    [ -s "$tmp/$log" ] || continue
    echo "# --- $log (last 60 lines)"
    tail -n 60 "$tmp/$log" | sed 's/^/# /'
  done
  exit 1
}

# wait_until COMMAND...: runs COMMAND until it succeeds; fails after the deadline.
wait_until() {
  end=$(($(date +%s) + deadline_s))
  until "$@"; do
    [ "$(date +%s)" -lt "$end" ] || return 1
    sleep 0.05
  done
}

# complete_lines FILE: the newline-terminated lines of FILE, which the demo
# is still writing: a last line not finished yet is left out, so no check
# matches half a line (a report id cut short, a list missing its last rows).
complete_lines() {
  cat "$1" > "$tmp/snapshot"
  if [ -n "$(tail -c 1 "$tmp/snapshot")" ]; then
    sed '$d' "$tmp/snapshot"
  else
    cat "$tmp/snapshot"
  fi
}

# lag_id SYMBOL: id of the first report on the demo's stdout with a frame in SYMBOL.
lag_id() {
  complete_lines "$tmp/stdout" | awk -v frame=" $1+0x" '
    /^lagwatch: / { id = $NF; gsub(/[][]/, "", id) }
    index($0, frame) && id != "" { print id; exit }'
}

# listed ID: a painted list had the row of report ID.
listed() {
  complete_lines "$tmp/stdout" | grep -Eq "^list: .* $1( |\$)"
}

# report_listed SYMBOL: a report naming SYMBOL arrived and is in the painted list.
report_listed() {
  id=$(lag_id "$1")
  [ -n "$id" ] && listed "$id"
}

# report_text ID: the report's text block, as the demo printed it.
report_text() {
  complete_lines "$tmp/stdout" | awk -v id="[$1]" '/^lagwatch: / { on = ($NF == id) } /^list: / { on = 0 } on'
}

# lag_record ID [FILTER]: the JSON Lines record of lag ID, through the jq
# FILTER, from the whole lines: a later record may be half-written as we
# read (the one of ID was complete before the callback). One program over
# all the lines (-n, inputs): jq -e's status is that of its last output,
# which per line would be the last line's, not the record's.
lag_record() {
  complete_lines "$tmp/lags.json" \
    | jq -R -n -e -c --arg id "$1" \
        "[inputs | fromjson | select(.event == \"lag\" and .id == \$id)] | first | ${2:-.}"
}

# lag_json ID CONDITION: the JSON Lines record of lag ID satisfies the jq CONDITION.
lag_json() {
  lag_record "$1" "$2" > /dev/null
}

# calls_drawn ID: the call timeline of lag ID was drawn; sets calls (the line).
calls_drawn() {
  calls=$(grep -E "^calls: $1: " "$tmp/stdout" | head -n 1)
  [ -n "$calls" ]
}
# flame_drawn ID: the flame graph of lag ID was drawn; sets flame (the line).
flame_drawn() {
  flame=$(grep -E "^flame: $1: " "$tmp/stdout" | head -n 1)
  [ -n "$flame" ]
}

# saved_all: the demo said it saved as many reports as the JSON sink has lags.
saved_all() {
  grep -Eq "^saved: $(jq -R -c 'fromjson? | select(.event == "lag") | .id' "$tmp/lags.json" | wc -l) reports to " \
    "$tmp/stdout"
}

# title_counts_rows: the window title counts as many lags as the last list line has rows.
title_counts_rows() {
  rows=$(complete_lines "$tmp/stdout" | grep '^list: ' | tail -n 1 | sed -E 's/^list: ([0-9]+) rows?:.*/\1/')
  title=$(xdotool getwindowname "$window")
  case "$title" in
    "lagwatch demo — $rows lag"*) return 0 ;;
    *) return 1 ;;
  esac
}

# chart_shows: a "chart:" line counts busy periods over a frame, a lag, and
# one in the bucket from 250 ms or a longer one (a 400 ms freeze).
chart_shows() {
  chart=$(complete_lines "$tmp/stdout" | grep -E '^chart: [0-9]+ s, [0-9]+ iterations, [1-9][0-9]* over 16.7 ms, [1-9][0-9]* lags, longest bucket from (250|500|1000|2500|5000|10000) ms$' | tail -n 1)
  [ -n "$chart" ]
}

# demo_exited: the demo is gone, or a zombie waiting for our wait.
demo_exited() {
  state=$(sed -E 's/.*\) (.).*/\1/' "/proc/$demo_pid/stat" 2> /dev/null) || return 0
  [ "$state" = Z ]
}

# check_freeze KEY SYMBOL SAYS JSON: presses KEY, then checks (see top) that
# a report naming SYMBOL is in the list, lasted 400 to 800 ms, says SAYS (an
# extended regular expression) in its text, and its JSON record meets JSON.
check_freeze() {
  key=$1 symbol=$2 says=$3 json=$4
  xdotool key "$key"
  wait_until report_listed "$symbol" || fail "$key: a report naming $symbol reached the list"
  ok "$key: report $id names $symbol, came through the callback and is in the painted list"

  wait_until title_counts_rows || fail "$key: window title counts the list's rows (title: $(xdotool getwindowname "$window"))"
  ok "$key: window title \"$title\" counts the list's rows"

  text=$(report_text "$id")
  duration=$(printf '%s\n' "$text" | sed -nE '1s/^lagwatch: lag of ([0-9.]+) ms.*/\1/p')
  # The freeze lasts 400 ms of wall time by its own clock, inside the lag:
  # a lag is at least that long. What else its iteration does (painting
  # the list) grows with the machine's load, so the upper bound is what
  # tells a wrong duration: under 800 ms, never two freezes' worth.
  awk -v d="$duration" 'BEGIN { exit !(d >= 399.9 && d < 800) }' \
    && printf '%s\n' "$text" | grep -Eq "$says" \
    || fail "$key: text: 400 to 800 ms (got ${duration:-none}), says /$says/"
  ok "$key: text: $duration ms, says /$says/"

  lag_json "$id" ".duration_ms >= 399.9 and .duration_ms < 800 and .complete
                  and any(.stack[]; .symbol == \"$symbol\") and $json" \
    || fail "$key: JSON record $id: 400 to 800 ms, complete, $symbol in the stack, $json
# $(lag_record "$id" 'del(.stack, .stacks)')"
  ok "$key: JSON record $id: 400 to 800 ms, complete, $symbol in the stack, $json"
}

echo "1..23"

# The display: Xvfb picks a free number itself (-displayfd); the cookie is
# loaded by the server from the file at start, then filed under that number.
cookie=$(mcookie)
: > "$tmp/xauthority"
xauth -q -f "$tmp/xauthority" add :0 . "$cookie"
Xvfb -displayfd 3 -auth "$tmp/xauthority" -nolisten tcp -screen 0 1280x800x24 \
  3> "$tmp/display" 2> "$tmp/xvfb.log" &
xvfb_pid=$!
wait_until test -s "$tmp/display" || fail "Xvfb started"
DISPLAY=:$(cat "$tmp/display")
xauth -q -f "$tmp/xauthority" add "$DISPLAY" . "$cookie"
XAUTHORITY=$tmp/xauthority
export DISPLAY XAUTHORITY

# GTK on this display only; the cairo renderer, because Xvfb has no GPU and
# GL through llvmpipe compiles shaders on the main thread: real lags, which
# the demo would list, but not the ones under test.
unset WAYLAND_DISPLAY LAGWATCH_DISABLE LAGWATCH_THRESHOLD_MS LAGWATCH_HANG_MS LAGWATCH_SAMPLE_MS \
  LAGWATCH_MAX_FRAMES
export GDK_BACKEND=x11 GSK_RENDERER=cairo
# Under a sanitizer build, leaks are checked at exit, GTK's own caches aside.
here=$(cd "$(dirname "$0")" && pwd)
export LSAN_OPTIONS="${LSAN_OPTIONS:-}:suppressions=$here/lsan-demo.supp"
LAGWATCH_OUTPUT="json:$tmp/lags.json" LAGWATCH_STATE_DIR="$tmp/state" \
  "$demo" --print-reports --threshold=100 --save-reports="$tmp/saved.jsonl" > "$tmp/stdout" 2> "$tmp/stderr" &
demo_pid=$!

window=$(timeout "$deadline_s" xdotool search --sync --onlyvisible --name '^lagwatch demo' | head -n 1) \
  && [ -n "$window" ] && timeout "$deadline_s" xdotool windowfocus --sync "$window" \
  || fail "demo window mapped and focused"
ok "demo window $window mapped and focused"

check_freeze ctrl+1 demo_freeze_busy 'by signal \(the thread was running\)' \
  '.thread_state == "running"'
busy_id=$id
# (Parenthesised throughout: jq 1.8 binds "A and B as $x | C" otherwise
# than jq 1.6 and 1.7.)
lag_json "$busy_id" '. as $lag | [.frames_missed[] | select(.title | startswith("lagwatch demo"))] as $windows
                     | ($windows | length) == 1 and $windows[0].refresh_interval_ms > 0
                       and (($windows[0].frames_missed - ($lag.duration_ms / $windows[0].refresh_interval_ms | floor))
                            | . >= -2 and . <= 2)' \
  && report_text "$busy_id" | grep -Eq "^  the window 'lagwatch demo[^']*' missed [0-9]+ frames \(one every [0-9.]+ ms\)\$" \
  || fail "ctrl+1: frames missed by the demo's window: duration / refresh interval ± 2
# $(lag_record "$busy_id" '{duration_ms, frames_missed}')"
ok "ctrl+1: frames missed by the demo's window: $(lag_record "$busy_id" '.frames_missed[0] | "\(.frames_missed) at \(.refresh_interval_ms) ms"')"
busy_samples=$(lag_record "$busy_id" '.samples')
# The samples of the freeze's own function: all of them, but on a loaded
# machine one may be taken after it returned, its caller still working.
in_busy=$(lag_record "$busy_id" '[.stacks[] | select(any(.stack[]; .symbol == "demo_freeze_busy")) | .samples] | add')
wait_until flame_drawn "$busy_id" || fail "flame graph of $busy_id drawn"
printf '%s\n' "$flame" | grep -Eq "culprit box demo_freeze_busy \($in_busy of $busy_samples samples\), in view\$" \
  || fail "flame graph of $busy_id: demo_freeze_busy, in $in_busy of $busy_samples samples, is the culprit's box and in view (got: $flame)"
ok "flame graph of $busy_id: $flame"
wait_until calls_drawn "$busy_id" || fail "call timeline of $busy_id drawn"
# A call tree is made of calls two samples or more saw: a machine so busy
# that the freeze got one sample has none to draw, and the check says so.
if [ "$busy_samples" -lt 2 ]; then
  ok "call timeline of $busy_id: # SKIP the busy freeze got $busy_samples sample on this loaded machine: no call to draw ($calls)"
else
  printf '%s\n' "$calls" | grep -Eq ": [1-9][0-9]* calls, [1-9][0-9]* rows, busiest demo_freeze_busy \([0-9]+ ms\)\$" \
    || fail "call timeline of $busy_id: demo_freeze_busy is the busiest call (got: $calls)"
  ok "call timeline of $busy_id: $calls"
fi
check_freeze ctrl+2 demo_freeze_sleep '^  waiting: .*, sleeping in clock_nanosleep\(\)' \
  '.thread_state == "sleeping" and .syscall == "clock_nanosleep"'
check_freeze ctrl+6 demo_freeze_timer_callback '^lagwatch: lag of .*, in GSource "demo: slow timer"' \
  '.source == "demo: slow timer" and .thread_state == "running"'

wait_until chart_shows || fail "the latency chart shows the freezes (last: $(grep '^chart: ' "$tmp/stdout" | tail -n 1))"
ok "latency chart: $chart"

xdotool key ctrl+s
wait_until saved_all || fail "Ctrl+S saved every lag (stdout: $(grep '^saved: ' "$tmp/stdout"))"
# Every lag, with its stacks where the sink's record has some (a lag that
# ended before its first stack, on a loaded machine, has none in either).
jq -R -c 'fromjson? | select(.event == "lag") | "\(.id) \((.stacks // []) | length > 0)"' "$tmp/lags.json" \
  | sort > "$tmp/sink-ids"
jq -c 'select(.event == "lag") | "\(.id) \((.stacks // []) | length > 0)"' "$tmp/saved.jsonl" \
  | sort > "$tmp/saved-ids" \
  && cmp -s "$tmp/sink-ids" "$tmp/saved-ids" \
  || fail "the saved file has every lag of the JSON sink, with stacks where it has some (sink: $(tr '\n' ' ' < "$tmp/sink-ids"); saved: $(tr '\n' ' ' < "$tmp/saved-ids"))"
ok "Ctrl+S: saved $(wc -l < "$tmp/saved-ids") lags as JSON Lines, the same ids as the JSON sink"

mkdir -p "$(dirname "$screenshot")"
import -window "$window" "$screenshot" \
  && [ "$(head -c 8 "$screenshot" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] \
  && identify -format '%w %h %k\n' "$screenshot" | awk '{ exit !($1 >= 800 && $2 >= 500 && $3 > 16) }' \
  || fail "screenshot $screenshot is a PNG of the window, not blank"
ok "screenshot $screenshot ($(identify -format '%wx%h, %k colours' "$screenshot"))"

# stutter_done: the demo said the stutter ended; sets stutter (the line).
stutter_done() {
  stutter=$(complete_lines "$tmp/stdout" | grep -E '^stutter: [0-9]+ busy periods' | head -n 1)
  [ -n "$stutter" ]
}
xdotool key ctrl+7
wait_until stutter_done || fail "ctrl+7: the stutter ran to its end"
ok "ctrl+7: $stutter"

xdotool key ctrl+q
wait_until demo_exited || fail "Ctrl+Q ends the demo"
status=0
wait "$demo_pid" || status=$?
demo_pid=""
[ "$status" -eq 0 ] && ! grep -Eq "lagwatch-WARNING|CRITICAL" "$tmp/stderr" \
  || fail "the demo exited with status 0 (got $status) and no lagwatch warning"
ok "Ctrl+Q: the demo exited with status 0, no lagwatch warning"

stutter_lags=$(jq -R -c 'fromjson? | select(.event == "lag" and .source == "demo: stutter") | .id' \
  "$tmp/lags.json" | wc -l)
# A loaded machine may stretch a busy period (the demo measures each one,
# descheduled time included): one the demo saw last 90 ms or more may end
# as a lag, rightly; then the check says so instead of failing.
longest=$(printf '%s\n' "$stutter" | sed -E 's/.*longest ([0-9.]+) ms.*/\1/')
if [ "$stutter_lags" -eq 0 ]; then
  ok "ctrl+7: no busy period of the stutter was a lag"
elif awk -v l="$longest" 'BEGIN { exit !(l >= 90) }'; then
  ok "ctrl+7: # SKIP the machine stretched a busy period to $longest ms: $stutter_lags lag(s)"
else
  fail "ctrl+7: no busy period of the stutter (longest $longest ms) was a lag (got $stutter_lags)"
fi
stats=$(jq -R -c 'fromjson? | select(.event == "stats")' "$tmp/lags.json" | tail -n 1)
printf '%s\n' "$stats" | jq -e '.lags >= 3 and .over_16_7ms >= 3 and .iterations > .over_16_7ms
                               and (.buckets | length) == 15' > /dev/null \
  || fail "the \"stats\" event at exit counts the three freezes (got: $stats)"
ok "\"stats\" event at exit: $(printf '%s\n' "$stats" | jq -c '{iterations, over_16_7ms, p99_ms, lags}')"
