#!/bin/sh
# run-gtk-python-test.sh LAUNCHER PROGRAMS_DIR
# A GTK 4 PyGObject program (programs/gtk-app.py, Gtk.Application.run) in a
# real X server, under the launcher, on Debian's CPython 3.11: its three
# 300 ms freezes, two in timeout handlers and one in a "clicked" signal
# handler, must be reported with the Python method that froze the window,
# its file and the line it spun on (TAP).
set -u
launcher=$1
program=$(realpath "$2/gtk-app.py")
python=/usr/bin/python3
tmp=$(mktemp -d)
xvfb_pid=""
cleanup() { [ -n "$xvfb_pid" ] && kill "$xvfb_pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
tests=0
failed=0
ok() { tests=$((tests + 1)); echo "ok $tests - $*"; }
not_ok() { tests=$((tests + 1)); failed=1; echo "not ok $tests - $*"; }
# check DESCRIPTION COMMAND...: one TAP line from COMMAND's exit status
# (its output dropped).
check() {
  what=$1; shift
  if "$@" > /dev/null; then ok "$what"; else not_ok "$what"; fi
}
bail() { echo "Bail out! $*"; exit 1; }

command -v jq > /dev/null || bail "jq not installed"
command -v Xvfb > /dev/null || bail "Xvfb not installed (package xvfb)"
"$python" -c 'import gi; gi.require_version("Gtk", "4.0"); from gi.repository import Gtk' 2> /dev/null \
  || bail "$python has no GTK 4 bindings (packages python3-gi, gir1.2-gtk-4.0)"

# Xvfb picks a free display itself and writes its number once it accepts
# connections: no race with another test's server.
Xvfb -displayfd 3 -screen 0 1024x768x24 -nolisten tcp 3> "$tmp/display" > "$tmp/xvfb.log" 2>&1 &
xvfb_pid=$!
deadline=$(( $(date +%s) + 60 ))
until grep -q '^[0-9][0-9]*$' "$tmp/display" 2> /dev/null; do
  kill -0 "$xvfb_pid" 2> /dev/null || { cat "$tmp/xvfb.log"; bail "Xvfb exited"; }
  [ "$(date +%s)" -lt "$deadline" ] || { cat "$tmp/xvfb.log"; bail "Xvfb did not start in 60 s"; }
  sleep 0.05
done
display=":$(cat "$tmp/display")"

# In an ASan build the preloaded library needs ASan's runtime loaded first;
# the interpreter is not instrumented: no leak check.
asan_preload=""
if [ -n "${LW_ASAN_RUNTIME:-}" ]; then
  asan_preload="$LW_ASAN_RUNTIME${LD_PRELOAD:+:$LD_PRELOAD}"
  export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
fi

# run_app RUN: the program under the launcher, into $tmp/RUN.{jsonl,out,err};
# it ends once all three reports are written (its own 120 s deadline).
run_app() {
  env ${asan_preload:+LD_PRELOAD=$asan_preload} LW_TEST_REPORT_FILE="$tmp/$1.jsonl" DISPLAY="$display" \
    GDK_BACKEND=x11 GSK_RENDERER=cairo NO_AT_BRIDGE=1 timeout 150 \
    "$launcher" --threshold 100 --output "json:$tmp/$1.jsonl,stderr" -- "$python" "$program" \
    > "$tmp/$1.out" 2> "$tmp/$1.err"
  code=$?
  sed "s/^/# $1: /" "$tmp/$1.out"
  if [ $code -ne 0 ] || [ "$(grep -c '^freeze ' "$tmp/$1.out")" -ne 3 ]; then
    sed 's/^/# /' "$tmp/$1.err" | tail -40
    bail "gtk-app.py under the launcher: exit status $code, $(grep -c '^freeze ' "$tmp/$1.out") of 3 freezes reported"
  fi
  ok "$1: the Gtk.Application program under the launcher: exit status 0, the three freezes reported"
}

run_app first
json="$tmp/first.jsonl"
# The summary table the launcher prints at exit, after the reports.
sed -n '/^lagwatch: summary of this run/,$p' "$tmp/first.err" > "$tmp/summary"

# check_freeze NAME: the report of the freeze in the method NAME
# (Window.NAME), from the id the program printed.
check_freeze() {
  qualname="Window.$1"
  spin_line=$(grep -n "# spin: $1\$" "$program" | cut -d: -f1)
  if [ -z "$spin_line" ] || [ "$(echo "$spin_line" | wc -l)" -ne 1 ]; then
    bail "no single '# spin: $1' line in $program"
  fi
  freeze=$(grep "^freeze $qualname " "$tmp/first.out")
  id=$(echo "$freeze" | cut -d' ' -f3)
  spin_ms=$(echo "$freeze" | cut -d' ' -f4)
  jq -c --arg id "$id" 'select(.id == $id)' "$json" > "$tmp/$qualname.json"
  report="$tmp/$qualname.json"
  check "$qualname: one lag report, id $id" \
    jq -s -e 'length == 1 and .[0].event == "lag"' "$report"
  # The main thread's id is the pid; the lag holds the whole spin, and
  # little more (other sources due in the same iteration).
  check "$qualname: on the main thread, $(jq '.duration_ms' "$report") ms for a $spin_ms ms spin" \
    jq -e --argjson spin "$spin_ms" '.thread_id == .pid and .duration_ms >= $spin - 1
                                     and .duration_ms <= $spin + 700' "$report"
  python_frames=$(jq -c '[.stack[] | select(.lang == "python") | [.symbol, (.file | split("/") | last), .line]]' "$report")
  echo "# $qualname: Python frames $python_frames"
  check "$qualname: the innermost Python frame is $qualname ($program:$spin_line)" \
    jq -e --arg symbol "$qualname" --arg file "$program" --argjson line "$spin_line" \
      'first(.stack[] | select(.lang == "python")) | .symbol == $symbol and .file == $file
       and .line == $line and .module == $file' "$report"
  check "$qualname: Gtk.Application.run's Python frames below it, main and <module> outermost" \
    jq -e '[.stack[] | select(.lang == "python")] as $py
           | ($py | map(.symbol) | .[-3:] == ["Application.run", "main", "<module>"])
           and ($py[-3].file | endswith("/gi/overrides/Gio.py"))' "$report"
  check "$qualname: no evaluation loop frame is left" \
    jq -e '[.stack[] | select(.symbol == "_PyEval_EvalFrameDefault")] == []' "$report"
  check "$qualname: the text report shows the frame as '$qualname (gtk-app.py:$spin_line)  [python]'" \
    grep -q "^  #[0-9]* *$qualname (gtk-app.py:$spin_line)  \[python\]\$" "$tmp/first.err"
  fingerprint=$(jq -r '.fingerprint' "$report")
  label=$(sed -n "s/^ *[0-9][0-9]* *[0-9.][0-9.]* *[0-9.][0-9.]*  $fingerprint  //p" "$tmp/summary")
  check "$qualname: the summary names $qualname as the innermost program frame (got '$label')" \
    [ "$label" = "$qualname" ]
}

for name in python_slow_handler other_slow_handler; do
  check_freeze $name
  check "the unnamed GLib.timeout_add source is described by its callable: $(jq -c '[.source, .source_callback]' "$report")" \
    jq -e --arg name "Window.$name" '.phase == "dispatch" and .source == null and .source_callback == $name' "$report"
done

check_freeze on_button_clicked
emit_line=$(grep -n 'self.button.emit("clicked")' "$program" | cut -d: -f1)
check "the signal handler's Python caller follows it: Window.press_button (gtk-app.py:$emit_line)" \
  jq -e --argjson line "$emit_line" \
    '[.stack[] | select(.lang == "python")] | .[1].symbol == "Window.press_button" and .[1].line == $line' \
    "$report"
check "the source that emitted \"clicked\" is described by its callable: $(jq -c '[.source, .source_callback]' "$report")" \
  jq -e '.phase == "dispatch" and .source == null and .source_callback == "Window.press_button"' "$report"

# fingerprint RUN NAME: the fingerprint of the report of NAME's freeze.
fingerprint() {
  id=$(grep "^freeze $2 " "$tmp/$1.out" | cut -d' ' -f3)
  jq -r --arg id "$id" 'select(.id == $id) | .fingerprint' "$tmp/$1.jsonl"
}
# fingerprints RUN: the three, in the order of the freezes.
fingerprints() {
  echo "$(fingerprint "$1" Window.python_slow_handler) $(fingerprint "$1" Window.other_slow_handler)" \
       "$(fingerprint "$1" Window.on_button_clicked)"
}
first=$(fingerprints first)
# The two timeout handlers share their native stack: only their Python
# frames tell them apart.
check "the three handlers' fingerprints differ ($first)" \
  [ "$(echo "$first" | tr ' ' '\n' | sort -u | grep -c .)" -eq 3 ]
# The same program run again: the same fingerprints, whatever the address
# space layout and the interpreter's memory.
run_app again
again=$(fingerprints again)
check "a rerun keeps the three fingerprints ($again)" [ "$again" = "$first" ]

echo "1..$tests"
exit $failed
