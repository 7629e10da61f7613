#!/bin/sh
# run-interpreters-test.sh LAUNCHER DLSYM_LOOP PROGRAMS_DIR
# The launcher on programs that run the default context without calling
# GLib through the PLT: PyGObject (GLib.MainLoop().run() and
# MainContext.iteration()), GJS, and a C program with a dlsym()'d
# g_main_loop_run. Each freezes its loop for 300 ms once: each must be
# reported.
set -u
launcher=$1
dlsym_loop=$2
programs=$3
tmp=$(mktemp -d)
status=0
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL $*"; status=1; }

if [ -n "${LW_ASAN_RUNTIME:-}" ]; then
  export LD_PRELOAD="$LW_ASAN_RUNTIME"
  export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
fi
# Debian's interpreter with python3-gi: the python3 first on PATH may be
# another build without it.
python=/usr/bin/python3

# The record of the 300 ms freeze: a lag in a dispatch. Only "lag" records
# count: GJS's freeze is 300 ms of CPU time, which a loaded machine may
# stretch past the hang threshold (2 s), and the "hang" record then written
# is an early copy of the same lag. A program starved of CPU as it exits
# (Python's finalization measured at 310 ms, 16 ms of it on CPU) is a lag
# too, but in the loop's own phase, not a dispatch.
freeze='select(.event == "lag" and .phase == "dispatch" and .duration_ms >= 250)'

# run NAME COMMAND...: runs under the launcher, JSON into $tmp/NAME.jsonl;
# checks exactly one report of the 300 ms freeze.
run() {
  name=$1; shift
  json="$tmp/$name.jsonl"
  LW_TEST_REPORT_FILE="$json" timeout 60 "$launcher" --threshold 100 --output "json:$json,stderr" -- "$@" > "$tmp/$name.log" 2>&1
  code=$?
  [ $code -eq 0 ] || { fail "$name: exit status $code"; tail -20 "$tmp/$name.log"; return 1; }
  [ -s "$json" ] || { fail "$name: no report at all"; tail -20 "$tmp/$name.log"; return 1; }
  count=$(jq -c "$freeze" "$json" | wc -l)
  [ "$count" -eq 1 ] || { fail "$name: expected one report of the 300 ms freeze, got $count: $(jq -c '{event, phase, duration_ms, source}' "$json")"; return 1; }
  echo "ok $name: $(jq -c "$freeze | {duration_ms, phase, source, samples}" "$json")"
  return 0
}

# lag_check FILE FILTER: the record of the freeze in FILE (other records, a
# "stats" event say, left out) meets FILTER.
lag_check() {
  jq -c "$freeze" "$1" | jq -e "$2" > /dev/null
}

# GLib's dispatch frame, by its exported name (GLib before 2.77) or by
# the name lagwatch gives it from its address (2.77 and later dispatch in
# static functions): a jq expression over an array of symbols.
dispatch='(index("g_main_context_dispatch") // index("g_main_dispatch"))'

command -v jq > /dev/null || { echo "FAIL jq not installed"; exit 1; }
"$python" -c 'import gi' 2> /dev/null || { echo "FAIL $python has no gi (package python3-gi)"; exit 1; }
command -v gjs > /dev/null || { echo "FAIL gjs not installed (package gjs)"; exit 1; }

run python-loop-run "$python" "$programs/loop-run.py"
run python-iteration "$python" "$programs/iteration.py"
if run gjs-loop-run gjs "$programs/loop-run.js"; then
  # JIT code (SpiderMonkey's, on by default) is marked, and the walk goes
  # on through it: gjs, GLib's dispatch and main below, nothing cut.
  lag=$freeze
  modules=$(jq -c "$lag | [.stack[] | .module // \"null\" | split(\"/\") | last]" "$tmp/gjs-loop-run.jsonl")
  symbols=$(jq -c "$lag | [.stack[] | .symbol]" "$tmp/gjs-loop-run.jsonl")
  if ! lag_check "$tmp/gjs-loop-run.jsonl" ".stack_truncated == false"; then
    fail "gjs: the stack is cut: $modules"
  elif ! lag_check "$tmp/gjs-loop-run.jsonl" "[.stack[] | .module] | index(\"[jit]\") as \$jit
                | \$jit != null
                and (map(. // \"\" | test(\"/libgjs\\\\.so\")) | .[\$jit:] | any)
                and (map(. // \"\" | test(\"/gjs-console\$\")) | .[\$jit:] | any)"; then
    fail "gjs: no [jit] frame with gjs and the program below it: $modules"
  elif ! lag_check "$tmp/gjs-loop-run.jsonl" "[.stack[] | .symbol] | $dispatch != null"; then
    fail "gjs: GLib's dispatch is not on the stack: $symbols"
  elif ! jq -s -e '[.[] | (.stacks // [])[] | .stack[] | .module] | all(. != null)' \
         "$tmp/gjs-loop-run.jsonl" > /dev/null; then
    fail "gjs: a frame has no module: $(jq -c '[(.stacks // [])[] | .stack[] | select(.module == null)]' "$tmp/gjs-loop-run.jsonl")"
  elif ! lag_check "$tmp/gjs-loop-run.jsonl" ".phase == \"dispatch\""; then
    fail "gjs: the GSource is not known"
  else
    echo "ok gjs-loop-run: [jit] frames marked, the whole native stack below: $modules"
  fi
fi
# JavaScript functions, named from SpiderMonkey's profiling stack: the
# innermost first, each where the engine was entered for it (the handler
# inside GLib's dispatch, the script's top level outside g_main_loop_run;
# in a sample whose walk was cut short of GLib's dispatch, "truncated",
# past the walk's last frame, in the same order),
# with its file and the line of its definition; the source is named by the
# handler, the summary by the innermost function; each handler has its own
# fingerprint, the same in every run; LAGWATCH_JS_FRAMES=0 turns it off.
#
# Which sample is the lag's "stack" is not the script's to say: GJS's
# samples differ in their innermost frames (GJS's and SpiderMonkey's code,
# which Debian ships without symbols, and JIT code), so each is a stack of
# its own, and the report's is the most recent of these ties. A sample
# may lack some JavaScript frames: the profiling stack's when its read,
# made after the capture while the thread runs on, no longer fits the
# stack captured (then only the compiled frames the handler took are
# there, the innermost). So the names are checked on every stack the lag
# lists: each names a run of the expected list, in order (never a wrong
# function, line or order), and one of them names them all. What depends on the report's own stack (the
# source named by the handler, the summary, the fingerprints) is checked
# when that stack names them all, which most runs do, and the ok line says
# when it did not.
js_line() { grep -n "^function $1(" "$programs/loop-run.js" | cut -d: -f1; }
# js_stacks FILE: the JavaScript frames of each stack of the freeze's lag.
js_stacks() {
  jq -c "$freeze"' | [.stacks[] | [.stack[] | select(.lang == "javascript") | [.symbol, (.file | split("/") | last), .line]]]' "$1"
}
# js_named FILE EXPECTED: every stack's JavaScript frames are a run of
# EXPECTED, and one stack has them all. jsSpinFor's own callee
# threadCpuUs(), compiled (called once a millisecond) and named as such,
# may be inward of it, with what it calls (GJS's own TextDecoder, in
# resource:///org/gnome/gjs/modules/): those frames are left out.
js_named() {
  js_stacks "$1" | jq -e --argjson expected "$2" \
    'map((map(.[0]) | index("threadCpuUs")) as $p
         | if $p != null and .[$p + 1][0] == "jsSpinFor" then .[$p + 1:] else . end)
     | any(. == $expected)
       and all(. as $s | any(range(0; ($expected | length) - ($s | length) + 1); $expected[.:. + ($s | length)] == $s))' > /dev/null
}
# heaviest_named FILE HANDLER: the report's own stack names HANDLER.
heaviest_named() {
  lag_check "$1" "[.stack[] | select(.lang == \"javascript\") | .symbol] | index(\"$2\") == 1"
}
if [ -s "$tmp/gjs-loop-run.jsonl" ] \
   && run gjs-again gjs "$programs/loop-run.js" \
   && run gjs-other env LW_TEST_JS_HANDLER=other gjs "$programs/loop-run.js" \
   && run gjs-off env LAGWATCH_JS_FRAMES=0 gjs "$programs/loop-run.js"; then
  lag=$freeze
  fingerprint() { jq -r "$lag | .fingerprint" "$tmp/$1.jsonl"; }
  expected="[[\"jsSpinFor\",\"loop-run.js\",$(js_line jsSpinFor)],[\"jsSlowHandler\",\"loop-run.js\",$(js_line jsSlowHandler)],[\"(top level)\",\"loop-run.js\",null]]"
  expected_other="[[\"jsSpinFor\",\"loop-run.js\",$(js_line jsSpinFor)],[\"jsOtherHandler\",\"loop-run.js\",$(js_line jsOtherHandler)],[\"(top level)\",\"loop-run.js\",null]]"
  if ! js_named "$tmp/gjs-loop-run.jsonl" "$expected"; then
    fail "gjs: JavaScript frames of the lag's stacks $(js_stacks "$tmp/gjs-loop-run.jsonl"), expected $expected (or its bottom)"
  elif ! lag_check "$tmp/gjs-loop-run.jsonl" '[.stacks[] | .truncated as $cut | .stack | map(.symbol)
         | select(index("jsSlowHandler") != null)
         | if '"$dispatch"' == null and $cut then index("jsSlowHandler") < index("(top level)")
           else index("jsSlowHandler") < '"$dispatch"'
             and index("g_main_loop_run") < index("(top level)")
             and index("(top level)") < index("gjs_context_eval") end] | all'; then
    fail "gjs: JavaScript frames out of place: $(jq -c "$lag | [.stacks[].stack | map(.symbol)]" "$tmp/gjs-loop-run.jsonl")"
  elif ! js_named "$tmp/gjs-other.jsonl" "$expected_other"; then
    fail "gjs: the other handler is not named: $(js_stacks "$tmp/gjs-other.jsonl")"
  elif ! jq -s -e '[.[] | select(.event == "lag") | .stacks[].stack[] | select(.lang == "javascript")] | length == 0' \
         "$tmp/gjs-off.jsonl" > /dev/null; then
    fail "gjs: LAGWATCH_JS_FRAMES=0 still names JavaScript functions"
  elif heaviest_named "$tmp/gjs-loop-run.jsonl" jsSlowHandler \
       && ! lag_check "$tmp/gjs-loop-run.jsonl" '.source_callback == "jsSlowHandler"'; then
    fail "gjs: the source is not named by the handler: $(jq -c "$lag | [.source, .source_callback]" "$tmp/gjs-loop-run.jsonl")"
  elif heaviest_named "$tmp/gjs-loop-run.jsonl" jsSlowHandler \
       && ! grep -Eq '^ +1 +[0-9.]+ +[0-9.]+ +[0-9a-f]{16} +jsSpinFor$' "$tmp/gjs-loop-run.log"; then
    fail "gjs: the summary does not name jsSpinFor: $(grep -A3 'summary of' "$tmp/gjs-loop-run.log")"
  elif heaviest_named "$tmp/gjs-loop-run.jsonl" jsSlowHandler && heaviest_named "$tmp/gjs-again.jsonl" jsSlowHandler \
       && heaviest_named "$tmp/gjs-other.jsonl" jsOtherHandler \
       && { [ "$(fingerprint gjs-loop-run)" != "$(fingerprint gjs-again)" ] \
            || [ "$(fingerprint gjs-loop-run)" = "$(fingerprint gjs-other)" ]; }; then
    fail "gjs: fingerprints: $(fingerprint gjs-loop-run) and, run again, $(fingerprint gjs-again); other handler $(fingerprint gjs-other)"
  else
    unchecked=""
    if ! heaviest_named "$tmp/gjs-loop-run.jsonl" jsSlowHandler; then
      unchecked="; not checked this run: the source's name, the summary and fingerprints (the first run's report is a sample without its handler)"
    elif ! heaviest_named "$tmp/gjs-again.jsonl" jsSlowHandler || ! heaviest_named "$tmp/gjs-other.jsonl" jsOtherHandler; then
      unchecked="; not checked this run: the fingerprints (a later run's report is a sample without its handler)"
    fi
    echo "ok gjs-names: $expected; fingerprints $(fingerprint gjs-loop-run) (again: $(fingerprint gjs-again)), other $(fingerprint gjs-other)$unchecked"
  fi
fi
# JavaScript the JIT compiled: jit-hot.js's handler spins in jitHot(), both
# called thousands of times first, so neither runs in the interpreter and
# the profiling stack has no entry for them (without lagwatch's sampler in
# the handler, its stacks name only the arrow function GLib calls and the
# script's top level). Some stack names jitHot inside jitHandler, each with
# the line of its definition, inside GLib's dispatch; no stack has them out
# of that order.
if run gjs-jit gjs "$programs/jit-hot.js"; then
  jit_line() { grep -n "^function $1(" "$programs/jit-hot.js" | cut -d: -f1; }
  jit_expected="[[\"jitHot\",\"jit-hot.js\",$(jit_line jitHot)],[\"jitHandler\",\"jit-hot.js\",$(jit_line jitHandler)]]"
  if ! js_stacks "$tmp/gjs-jit.jsonl" | jq -e --argjson expected "$jit_expected" 'any(.[0:2] == $expected)' > /dev/null; then
    fail "gjs-jit: no stack names jitHot inside jitHandler ($jit_expected): $(js_stacks "$tmp/gjs-jit.jsonl")"
  elif ! lag_check "$tmp/gjs-jit.jsonl" '[.stacks[] | .truncated as $cut | .stack | map(.symbol)
         | select(index("jitHandler") != null)
         | (('"$dispatch"' == null and $cut) or index("jitHandler") < '"$dispatch"')
           and (index("jitHot") // -1) < index("jitHandler")] | all'; then
    fail "gjs-jit: compiled JavaScript frames out of place: $(jq -c "$freeze | [.stacks[].stack | map(.symbol)]" "$tmp/gjs-jit.jsonl")"
  else
    echo "ok gjs-jit: $jit_expected inside GLib's dispatch; stacks $(js_stacks "$tmp/gjs-jit.jsonl" | jq -c 'map(map(.[0]))')"
  fi
fi
# An unnamed source is named by its callback's function; a name set with
# g_source_set_name() wins.
if run c-dlsym-loop "$dlsym_loop"; then
  lag=$freeze
  if ! lag_check "$tmp/c-dlsym-loop.jsonl" ".source == null and .source_callback == \"freeze_busy\"
              and .source_callback_kind == \"g_timeout_add\""; then
    fail "c-dlsym-loop: the source is not named by its callback: $(jq -c "$lag | [.source, .source_callback, .source_callback_kind]" "$tmp/c-dlsym-loop.jsonl")"
  elif ! grep -q "in g_timeout_add callback freeze_busy (unnamed GSource, priority 0)" "$tmp/c-dlsym-loop.log"; then
    fail "c-dlsym-loop: the text report does not name the callback: $(grep -m1 ' in ' "$tmp/c-dlsym-loop.log")"
  else
    echo "ok c-dlsym-loop: in g_timeout_add callback freeze_busy"
  fi
fi
if run c-dlsym-loop-named "$dlsym_loop" named; then
  if ! jq -s -e "map($freeze)"' | length == 1 and (.[0] | .source == "dlsym-loop: named freeze" and .source_callback == null)' \
       "$tmp/c-dlsym-loop-named.jsonl" > /dev/null; then
    fail "c-dlsym-loop-named: the source's own name does not win: $(jq -c '[.source, .source_callback]' "$tmp/c-dlsym-loop-named.jsonl")"
  else
    echo "ok c-dlsym-loop-named: the source's own name wins"
  fi
fi
# A poll function of the program's own: GLib calls it (with milliseconds,
# on every release), and it polls; lagwatch wraps it.
run c-dlsym-loop-own-poll "$dlsym_loop" own-poll
exit $status
