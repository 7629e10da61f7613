#!/bin/sh
# run-journal-test.sh LAGGER CATALOG LAUNCHER PYTHON_LAGGER DROPPER: the journal sink against a real
# systemd-journald, and the fleet path (systemd-journal-upload to
# systemd-journal-remote over loopback HTTP). TAP on stdout.
#
# journald runs standalone as root inside a private mount and network
# namespace (unshare -mn) with tmpfs on /run/systemd, /run/log,
# /var/log/journal and the catalog directories: nothing of the host's
# journal is read or written, and the loopback port is the namespace's own.
# Without root or namespaces the test skips with the reason.
set -eu

LAG_ID=3802ef6738634daaa06b6a88b4eb11d8
HANG_ID=b70a2ceed6854326a92aae67153d7fe0
KILLED_ID=a969dfa4320e48a0bd6a632d473137a7
DROPPED_ID=9f434d79249d48d5b418a4293bec01f3
JOURNALD=/lib/systemd/systemd-journald
REMOTE=/lib/systemd/systemd-journal-remote
UPLOAD=/lib/systemd/systemd-journal-upload
PORT=19532

skip_all() {
  echo "1..0 # SKIP $1"
  exit 0
}

if [ -z "${LW_JOURNAL_TEST_INSIDE:-}" ]; then
  [ "$(id -u)" -eq 0 ] || skip_all "needs root: systemd-journald is started in a mount namespace"
  for tool in "$JOURNALD" "$REMOTE" "$UPLOAD"; do
    [ -x "$tool" ] || skip_all "$tool is missing (Debian packages systemd, systemd-journal-remote)"
  done
  for tool in unshare journalctl jq ip ss; do
    command -v "$tool" > /dev/null || skip_all "$tool is missing"
  done
  unshare -mn true 2> /dev/null || skip_all "mount and network namespaces are not allowed here"
  LW_JOURNAL_TEST_INSIDE=1 exec unshare -mn "$0" "$@"
fi

lagger=$1
catalog=$2
launcher=$3
python_lagger=$4
dropper=$5
tmp=$(mktemp -d)
journald_pid=""
remote_pid=""

cleanup() {
  [ -n "$remote_pid" ] && kill "$remote_pid" 2> /dev/null && wait "$remote_pid" 2> /dev/null
  [ -n "$journald_pid" ] && kill "$journald_pid" 2> /dev/null && wait "$journald_pid" 2> /dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

# The mounts stay in this namespace and go with it.
mount --make-rprivate /
for dir in /run/systemd /run/log /var/log/journal /usr/lib/systemd/catalog /var/lib/systemd/catalog; do
  mkdir -p "$dir"
  mount -t tmpfs tmpfs "$dir"
done
ip link set lo up

# wait_for SECONDS COMMAND...: runs COMMAND until it succeeds; FALSE after
# SECONDS (a deadline for a loaded machine, not a delay).
wait_for() {
  deadline=$(($(date +%s) + $1))
  shift
  until "$@"; do
    [ "$(date +%s)" -lt "$deadline" ] || return 1
    sleep 0.05
  done
}

# entries FILTER...: the matching entries of the local journal, one JSON
# object a line; --all: LAGWATCH_RECORD is longer than journalctl's 4096
# byte limit for JSON output.
entries() {
  journalctl -q -o json --all "$@" 2> /dev/null || true
}

# has_entries N FILTER...: TRUE when at least N entries match.
has_entries() {
  n=$1
  shift
  [ "$(entries "$@" | grep -c .)" -ge "$n" ]
}

# expect JSON JQ-FILTER [JQ OPTIONS...]: TRUE when JQ-FILTER holds for the
# object JSON; otherwise says which check failed. (Test functions run as
# if-conditions, where set -e does not apply: every check ends in
# "|| return 1".)
expect() {
  json=$1
  filter=$2
  shift 2
  if ! printf '%s\n' "$json" | jq -e "$@" "$filter" > /dev/null; then
    echo "# failed: $filter"
    # The entry itself (its record aside: too long for a line).
    printf '%s\n' "$json" | jq -c 'del(.LAGWATCH_RECORD)' 2>&1 | cut -c 1-2000 | sed 's/^/#   entry: /'
    return 1
  fi
}

test_number=0
failed=0
# run_test NAME FUNCTION: one TAP line for FUNCTION's outcome.
run_test() {
  test_number=$((test_number + 1))
  if "$2" > "$tmp/test.log" 2>&1; then
    echo "ok $test_number - $1"
  else
    echo "not ok $test_number - $1"
    sed 's/^/# /' "$tmp/test.log"
    failed=1
  fi
}

start_journald() {
  "$JOURNALD" > "$tmp/journald.log" 2>&1 &
  journald_pid=$!
  wait_for 60 test -S /run/systemd/journal/socket
}

# count FILE PATTERN: how many lines of FILE match PATTERN (0 when none).
count() {
  grep -c -- "$2" "$1" || true
}

# Lags: one entry each with every field of the contract, matching the JSON
# Lines record and the stderr report written beside it. The JSON Lines file
# says how many lags there were: lagwatch drops a lag its watcher was too
# late to time (a loaded machine), which no test can rule out.
test_lag_entries() {
  LAGWATCH_OUTPUT="journal,json:$tmp/lag.jsonl,stderr" "$lagger" lag 3 2> "$tmp/lag.err" || return 1
  lags=$(count "$tmp/lag.jsonl" "^{\"event\":\"lag\"")
  [ "$lags" -ge 1 ] || { echo "# no JSON Lines record"; return 1; }
  pid=$(head -n 1 "$tmp/lag.jsonl" | jq -r .pid)
  wait_for 60 has_entries "$lags" MESSAGE_ID=$LAG_ID _PID="$pid" || { echo "# not $lags lag entries in the journal"; return 1; }
  [ "$(entries MESSAGE_ID=$LAG_ID _PID="$pid" | grep -c .)" -eq "$lags" ] || { echo "# more than $lags entries"; return 1; }
  for n in $(seq "$lags"); do
    record=$(sed -n "${n}p" "$tmp/lag.jsonl")
    id=$(printf '%s' "$record" | jq -r .id)
    header=$(grep "^lagwatch: lag of .*\[$id\]\$" "$tmp/lag.err")
    entry=$(entries MESSAGE_ID=$LAG_ID LAGWATCH_ID="$id")
    [ -n "$entry" ] || { echo "# no entry with LAGWATCH_ID=$id"; return 1; }
    echo "# entry $n: $(printf '%s' "$entry" | jq -c 'del(.LAGWATCH_RECORD, .LAGWATCH_STACK)')"
    expect "$entry" '.PRIORITY == "4" and .LAGWATCH_EVENT == "lag"' || return 1
    expect "$entry" '.CODE_FUNC == "journal_test_spin"' || return 1
    # file:line of a C frame comes from DWARF (libdw).
    if [ "${LW_TEST_LIBDW:-1}" = 1 ]; then
      expect "$entry" '(.CODE_FILE | endswith("journal-lagger.c")) and (.CODE_LINE | tonumber) > 0' || return 1
    fi
    expect "$entry" '.MESSAGE == $header' --arg header "$header" || return 1
    expect "$entry" '
      ($record | fromjson) as $r
      | .LAGWATCH_RECORD == $record
      and (.LAGWATCH_RECORD | fromjson | .id) == $r.id
      and .LAGWATCH_ID == $r.id
      and (.LAGWATCH_DURATION_MS | tonumber) == $r.duration_ms
      and (.LAGWATCH_THRESHOLD_MS | tonumber) == $r.threshold_ms
      and .LAGWATCH_SOURCE == "journal-test: spin" and .LAGWATCH_SOURCE == $r.source
      and .LAGWATCH_PHASE == $r.phase
      and (.LAGWATCH_CPU_MS | tonumber) == $r.cpu_ms
      and .LAGWATCH_FINGERPRINT == $r.fingerprint
      and (.LAGWATCH_OCCURRENCE | tonumber) == $r.occurrence and $r.occurrence == $n
      and .LAGWATCH_THREAD == "\($r.thread_id) \"\($r.thread_name)\""
      and (.LAGWATCH_STACK | test("^  #0 .*\n(.*\n)*  #[0-9]+ .*journal_test_spin"))
    ' --arg record "$record" --argjson n "$n" || { echo "# record $n: $record"; return 1; }
  done
}

# A hang: an error entry while it goes on; killed, the next run writes a
# hang-killed entry that carries the hang's record.
test_hang_and_killed() {
  LAGWATCH_OUTPUT=journal LAGWATCH_HANG_MS=200 LAGWATCH_STATE_DIR="$tmp/state" \
    "$lagger" hang 2> "$tmp/hang.err" &
  hang_pid=$!
  wait_for 60 has_entries 1 MESSAGE_ID=$HANG_ID _PID=$hang_pid || { echo "# no hang entry"; kill -KILL $hang_pid; return 1; }
  kill -KILL $hang_pid
  status=0
  wait $hang_pid || status=$?
  [ $status -eq 137 ] || { echo "# the hanging run ended with $status, not by the kill"; return 1; }
  hang=$(entries MESSAGE_ID=$HANG_ID _PID=$hang_pid)
  expect "$hang" '.PRIORITY == "3" and .LAGWATCH_EVENT == "hang" and .CODE_FUNC == "journal_test_spin"' || return 1
  expect "$hang" '(.LAGWATCH_RECORD | fromjson) as $r | $r.event == "hang" and $r.id == .LAGWATCH_ID' || return 1
  expect "$hang" '(.LAGWATCH_DURATION_MS | tonumber) >= 200' || return 1
  hang_id=$(printf '%s' "$hang" | jq -r .LAGWATCH_ID)

  LAGWATCH_OUTPUT="journal,json:$tmp/killed.jsonl" LAGWATCH_STATE_DIR="$tmp/state" \
    "$lagger" quiet 2> "$tmp/killed.err" &
  next_pid=$!
  wait $next_pid || { echo "# the run after the kill failed: $(cat "$tmp/killed.err")"; return 1; }
  wait_for 60 has_entries 1 MESSAGE_ID=$KILLED_ID _PID=$next_pid || { echo "# no hang-killed entry"; return 1; }
  killed=$(entries MESSAGE_ID=$KILLED_ID _PID=$next_pid)
  echo "# hang-killed: $(printf '%s' "$killed" | jq -c 'del(.LAGWATCH_RECORD)')"
  expect "$killed" '.PRIORITY == "3" and .LAGWATCH_EVENT == "hang-killed"' || return 1
  expect "$killed" '.LAGWATCH_ID == $id' --arg id "$hang_id" || return 1
  expect "$killed" '.MESSAGE | startswith("lagwatch: the previous run (pid ")' || return 1
  # MESSAGE stands alone: it says how long the hang went on and which it was.
  expect "$killed" '.MESSAGE | test("killed during a hang that was still going after [0-9.]+ ms.*\\[" + $id + "\\]$")' \
    --arg id "$hang_id" || return 1
  # journalctl LAGWATCH_FINGERPRINT=... finds the killed hang with its lags.
  expect "$killed" '.LAGWATCH_FINGERPRINT == (.LAGWATCH_RECORD | fromjson | .hang.fingerprint)' || return 1
  expect "$killed" '.LAGWATCH_FINGERPRINT == $fp' --arg fp "$(printf '%s' "$hang" | jq -r .LAGWATCH_FINGERPRINT)" || return 1
  expect "$killed" '
      .LAGWATCH_RECORD == $record
      and (.LAGWATCH_RECORD | fromjson | .hang.id == $id and .previous_pid == $pid)
    ' --arg record "$(cat "$tmp/killed.jsonl")" --arg id "$hang_id" --argjson pid "$hang_pid" || return 1
}

# The launcher takes "journal" in --output and hands it to the program.
test_launcher() {
  # An ASan build's preload library needs ASan's runtime loaded first (the
  # launcher keeps the user's LD_PRELOAD in front); for these runs only.
  asan_preload=${LW_ASAN_RUNTIME:+LD_PRELOAD=$LW_ASAN_RUNTIME}
  status=0
  "$launcher" --output journal,bogus -- true 2> "$tmp/bogus.err" || status=$?
  [ $status -ne 0 ] && grep -q 'unknown sink "bogus"' "$tmp/bogus.err" ||
    { echo "# --output journal,bogus was not refused: $(cat "$tmp/bogus.err")"; return 1; }
  env -u LAGWATCH_OUTPUT $asan_preload "$launcher" --output "journal,json:$tmp/launcher.jsonl" -- "$lagger" lag 2 ||
    { echo "# the launcher failed"; return 1; }
  [ "$(count "$tmp/launcher.jsonl" .)" -ge 1 ] || { echo "# no JSON Lines record"; return 1; }
  record=$(head -n 1 "$tmp/launcher.jsonl")
  pid=$(printf '%s' "$record" | jq -r .pid)
  wait_for 60 has_entries 1 MESSAGE_ID=$LAG_ID _PID="$pid" || { echo "# no lag entry"; return 1; }
  expect "$(entries MESSAGE_ID=$LAG_ID _PID="$pid" | head -n 1)" '.LAGWATCH_RECORD == $record' \
    --arg record "$record" || return 1
}

# CODE_FUNC, CODE_FILE and CODE_LINE name the summary's innermost program
# frame: for a PyGObject handler that spends its time in zlib's deflate(),
# the Python handler and its .py file, as the summary printed at exit.
test_python_code_frame() {
  /usr/bin/python3 -c 'import gi' 2> /dev/null || { echo "# SKIP /usr/bin/python3 has no gi"; return 0; }
  env -u LAGWATCH_OUTPUT ${LW_ASAN_RUNTIME:+LD_PRELOAD=$LW_ASAN_RUNTIME} \
    ${LW_ASAN_RUNTIME:+ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0} LW_TEST_REPORT_FILE="$tmp/python.jsonl" \
    "$launcher" --output "journal,json:$tmp/python.jsonl,stderr" -- /usr/bin/python3 "$python_lagger" zlib_handler \
    2> "$tmp/python.err" || { echo "# the launcher failed"; sed 's/^/# /' "$tmp/python.err"; return 1; }
  record=$(grep -m 1 '^{"event":"lag"' "$tmp/python.jsonl")
  [ -n "$record" ] || { echo "# no JSON Lines record"; return 1; }
  id=$(printf '%s' "$record" | jq -r .id)
  fingerprint=$(printf '%s' "$record" | jq -r .fingerprint)
  summary=$(sed -n "s/^ *[0-9]* *[0-9.]* *[0-9.]* *$fingerprint  //p" "$tmp/python.err")
  wait_for 60 has_entries 1 MESSAGE_ID=$LAG_ID LAGWATCH_ID="$id" || { echo "# no lag entry"; return 1; }
  entry=$(entries MESSAGE_ID=$LAG_ID LAGWATCH_ID="$id" | head -n 1)
  echo "# summary: $summary; entry: $(printf '%s' "$entry" | jq -c '{CODE_FUNC, CODE_FILE, CODE_LINE}')"
  expect "$entry" '.CODE_FUNC == "zlib_handler" and .CODE_FUNC == $summary' --arg summary "$summary" || return 1
  expect "$entry" '
    ($record | fromjson | [.stack[] | select(.lang == "python")][0]) as $f
    | .CODE_FILE == $f.file and (.CODE_LINE | tonumber) == $f.line
  ' --arg record "$record" || return 1
}

# Records lost on the way: an entry of their own kind, not a lag's.
test_dropped() {
  "$dropper" 2> "$tmp/dropped.err" &
  dropper_pid=$!
  wait $dropper_pid || { echo "# journal-dropped failed: $(cat "$tmp/dropped.err")"; return 1; }
  wait_for 60 has_entries 1 _PID=$dropper_pid || { echo "# no entry"; return 1; }
  entry=$(entries _PID=$dropper_pid)
  echo "# dropped: $(printf '%s' "$entry" | jq -c '{MESSAGE_ID, PRIORITY, LAGWATCH_EVENT, LAGWATCH_DROPPED, MESSAGE}')"
  expect "$entry" '.MESSAGE_ID == $id and .PRIORITY == "4" and .LAGWATCH_EVENT == "dropped"' --arg id $DROPPED_ID || return 1
  expect "$entry" '.LAGWATCH_DROPPED == "3" and (.LAGWATCH_RECORD | fromjson | .count == 3)' || return 1
  expect "$entry" '.MESSAGE == "lagwatch: 3 reports dropped: sink stalled (a reader of the output stopped reading)"' || return 1
}

# catalog_fields ID: the fields the catalog's text for ID substitutes
# (@NAME@), one a line.
catalog_fields() {
  sed -n "/^-- $1\$/,/^-- /p" "$catalog" | grep -o '@[A-Z_0-9]*@' | tr -d @ | sort -u
}

# journalctl -x explains a lag with the installed catalog.
test_catalog() {
  cp "$catalog" /usr/lib/systemd/catalog/lagwatch.catalog
  journalctl --update-catalog || return 1
  for id in $LAG_ID $HANG_ID $KILLED_ID $DROPPED_ID; do
    journalctl --dump-catalog "$id" | grep -q "^Defined-By: lagwatch" || { echo "# $id is not in the catalog"; return 1; }
  done
  record=$(head -n 1 "$tmp/lag.jsonl")
  id=$(printf '%s' "$record" | jq -r .id)
  ms=$(printf '%s' "$record" | jq -r '.duration_ms | tostring | if test("\\.") then . else . + ".0" end')
  journalctl -x -q MESSAGE_ID=$LAG_ID LAGWATCH_ID="$id" > "$tmp/explained.txt"
  sed 's/^/# /' "$tmp/explained.txt" | head -n 12
  grep -q "Subject: The main loop of journal-lagger stalled for $ms ms" "$tmp/explained.txt" &&
    grep -q "It happened in GSource \"journal-test: spin\" (priority 0)\." "$tmp/explained.txt" &&
    grep -q "ends in the program at journal_test_spin" "$tmp/explained.txt" ||
    { echo "# journalctl -x does not explain the lag"; return 1; }
  # An unnamed GSource: journalctl -x puts a field's name where the entry
  # lacks it ("in the GSource \"LAGWATCH_SOURCE\""); the text names the callback.
  LAGWATCH_OUTPUT="journal,json:$tmp/unnamed.jsonl" "$lagger" unnamed 1 2> "$tmp/unnamed.err" || return 1
  record=$(grep -m 1 '^{"event":"lag"' "$tmp/unnamed.jsonl")
  [ -n "$record" ] || { echo "# no lag in the unnamed source"; return 1; }
  id=$(printf '%s' "$record" | jq -r .id)
  wait_for 60 has_entries 1 MESSAGE_ID=$LAG_ID LAGWATCH_ID="$id" || { echo "# no entry for $id"; return 1; }
  journalctl -x -q MESSAGE_ID=$LAG_ID LAGWATCH_ID="$id" > "$tmp/unnamed.txt"
  sed 's/^/# /' "$tmp/unnamed.txt" | sed -n '1p;/It happened/,/CPU_MS/p'
  grep -q "It happened in g_timeout_add callback lag_once (unnamed GSource, priority 0)\." "$tmp/unnamed.txt" ||
    { echo "# journalctl -x does not name the unnamed source's callback"; return 1; }
  # Every field the catalog substitutes, in every entry of its MESSAGE_ID
  # this journal holds (lags, hangs, killed hangs, named or not).
  for mid in $LAG_ID $HANG_ID $KILLED_ID $DROPPED_ID; do
    n=$(entries MESSAGE_ID=$mid | grep -c .)
    [ "$n" -ge 1 ] || { echo "# no entry of $mid to check"; return 1; }
    for field in $(catalog_fields $mid); do
      missing=$(entries MESSAGE_ID=$mid | jq -r --arg f "$field" 'select(has($f) | not) | .LAGWATCH_ID // .MESSAGE')
      [ -z "$missing" ] || { echo "# $mid: entries without $field, which journalctl -x would print as its name: $missing"; return 1; }
    done
    echo "# $mid: $n entries, each with $(catalog_fields $mid | tr '\n' ' ')"
  done
}

# The fleet path: the local journal is uploaded over HTTP to a
# systemd-journal-remote started here, whose journal holds the lags.
test_upload_to_remote() {
  mkdir -p "$tmp/remote"
  "$REMOTE" --listen-http=127.0.0.1:$PORT --split-mode=none --output="$tmp/remote/remote.journal" \
    > "$tmp/remote.log" 2>&1 &
  remote_pid=$!
  wait_for 60 remote_listening || { echo "# journal-remote does not listen"; cat "$tmp/remote.log"; return 1; }
  # --follow=no: upload what is there and exit; timeout bounds it all the same.
  timeout 120 "$UPLOAD" --url=http://127.0.0.1:$PORT --follow=no --system \
    > "$tmp/upload.log" 2>&1 || { echo "# upload failed"; cat "$tmp/upload.log"; return 1; }
  kill "$remote_pid"
  wait "$remote_pid" || true
  remote_pid=""
  record=$(head -n 1 "$tmp/lag.jsonl")
  id=$(printf '%s' "$record" | jq -r .id)
  received=$(journalctl -q -o json --all --file="$tmp/remote/remote.journal" MESSAGE_ID=$LAG_ID LAGWATCH_ID="$id")
  [ -n "$received" ] || { echo "# lag $id did not arrive"; return 1; }
  expect "$received" '
    .LAGWATCH_RECORD == $record and .PRIORITY == "4" and .CODE_FUNC == "journal_test_spin"
  ' --arg record "$record" || return 1
  pid=$(printf '%s' "$record" | jq -r .pid)
  [ "$(journalctl -q -o json --file="$tmp/remote/remote.journal" MESSAGE_ID=$LAG_ID _PID="$pid" | grep -c .)" \
    -eq "$(count "$tmp/lag.jsonl" "^{\"event\":\"lag\"")" ] || { echo "# not every lag of pid $pid arrived"; return 1; }
}

remote_listening() {
  ss -Hltn "sport = :$PORT" | grep -q LISTEN
}

# falls_back NAME WARNING: a run whose journal sink fails gives WARNING
# once and each report (as many as its JSON Lines records) on stderr.
falls_back() {
  LAGWATCH_OUTPUT="journal,json:$tmp/$1.jsonl" "$lagger" lag 3 2> "$tmp/$1.err" || return 1
  grep -v '^  ' "$tmp/$1.err" | sed 's/^/# /'
  lags=$(count "$tmp/$1.jsonl" "^{\"event\":\"lag\"")
  [ "$lags" -ge 1 ] || { echo "# no JSON Lines record"; return 1; }
  [ "$(count "$tmp/$1.err" "$2")" -eq 1 ] || { echo "# not one warning \"$2\""; return 1; }
  [ "$(count "$tmp/$1.err" "^lagwatch: lag of ")" -eq "$lags" ] || { echo "# not $lags reports on stderr"; return 1; }
}

# journald gone, its socket left behind: sd_journal_sendv() fails.
test_refused_falls_back() {
  kill "$journald_pid"
  wait "$journald_pid" || true
  journald_pid=""
  test -S /run/systemd/journal/socket || { echo "# the socket went with journald"; return 1; }
  falls_back refused "the journal refused a report"
}

# No journal at all: the sink is replaced by stderr at start.
test_no_journal_falls_back() {
  rm -f /run/systemd/journal/socket
  falls_back none "no journal here"
}

echo "1..9"
if ! start_journald; then
  echo "Bail out! systemd-journald did not start: $(cat "$tmp/journald.log")"
  exit 1
fi
run_test /journal/lag-entries test_lag_entries
run_test /journal/hang-and-killed test_hang_and_killed
run_test /journal/launcher test_launcher
run_test /journal/python-code-frame test_python_code_frame
run_test /journal/dropped test_dropped
run_test /journal/catalog test_catalog
run_test /journal/upload-to-remote test_upload_to_remote
run_test /journal/refused-falls-back test_refused_falls_back
run_test /journal/no-journal-falls-back test_no_journal_falls_back
exit $failed
