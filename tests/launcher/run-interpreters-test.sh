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

# run NAME COMMAND...: runs under the launcher, JSON into $tmp/NAME.jsonl;
# checks exactly one report of the 300 ms freeze.
run() {
  name=$1; shift
  json="$tmp/$name.jsonl"
  LW_TEST_REPORT_FILE="$json" timeout 60 "$launcher" --threshold 100 --output "json:$json,stderr" -- "$@" > "$tmp/$name.log" 2>&1
  code=$?
  [ $code -eq 0 ] || { fail "$name: exit status $code"; tail -20 "$tmp/$name.log"; return 1; }
  [ -s "$json" ] || { fail "$name: no report at all"; tail -20 "$tmp/$name.log"; return 1; }
  count=$(jq -c 'select(.duration_ms >= 250)' "$json" | wc -l)
  [ "$count" -eq 1 ] || { fail "$name: expected one report of the 300 ms freeze, got $count: $(jq -c '{duration_ms, source}' "$json")"; return 1; }
  echo "ok $name: $(jq -c 'select(.duration_ms >= 250) | {duration_ms, phase, source, samples}' "$json")"
  return 0
}

# lag_check FILE FILTER: the record of the freeze in FILE (one lag of 250 ms
# or more; other records, a "stats" event say, left out) meets FILTER.
lag_check() {
  jq -c 'select(.event == "lag" and .duration_ms >= 250)' "$1" | jq -e "$2" > /dev/null
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
  lag='select(.event == "lag" and .duration_ms >= 250)'
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
# inside GLib's dispatch, the script's top level outside g_main_loop_run),
# with its file and the line of its definition; the source is named by the
# handler, the summary by the innermost function; each handler has its own
# fingerprint, the same in every run; LAGWATCH_JS_FRAMES=0 turns it off.
js_line() { grep -n "^function $1(" "$programs/loop-run.js" | cut -d: -f1; }
if [ -s "$tmp/gjs-loop-run.jsonl" ] \
   && run gjs-again gjs "$programs/loop-run.js" \
   && run gjs-other env LW_TEST_JS_HANDLER=other gjs "$programs/loop-run.js" \
   && run gjs-off env LAGWATCH_JS_FRAMES=0 gjs "$programs/loop-run.js"; then
  lag='select(.event == "lag" and .duration_ms >= 250)'
  js=$(jq -c "$lag | [.stack[] | select(.lang == \"javascript\") | [.symbol, (.file | split(\"/\") | last), .line]]" \
         "$tmp/gjs-loop-run.jsonl")
  fingerprint() { jq -r "$lag | .fingerprint" "$tmp/$1.jsonl"; }
  expected="[[\"jsSpinFor\",\"loop-run.js\",$(js_line jsSpinFor)],[\"jsSlowHandler\",\"loop-run.js\",$(js_line jsSlowHandler)],[\"(top level)\",\"loop-run.js\",null]]"
  if [ "$js" != "$expected" ]; then
    fail "gjs: JavaScript frames $js, expected $expected"
  elif ! lag_check "$tmp/gjs-loop-run.jsonl" "[.stack[] | .symbol] as \$s
         | (\$s | index(\"jsSlowHandler\")) < (\$s | $dispatch)
         and (\$s | index(\"g_main_loop_run\")) < (\$s | index(\"(top level)\"))
         and (\$s | index(\"(top level)\")) < (\$s | index(\"gjs_context_eval\"))"; then
    fail "gjs: JavaScript frames out of place: $(jq -c "$lag | [.stack[] | .symbol]" "$tmp/gjs-loop-run.jsonl")"
  elif ! lag_check "$tmp/gjs-loop-run.jsonl" '.source_callback == "jsSlowHandler"'; then
    fail "gjs: the source is not named by the handler: $(jq -c "$lag | [.source, .source_callback]" "$tmp/gjs-loop-run.jsonl")"
  elif ! grep -Eq '^ +1 +[0-9.]+ +[0-9.]+ +[0-9a-f]{16} +jsSpinFor$' "$tmp/gjs-loop-run.log"; then
    fail "gjs: the summary does not name jsSpinFor: $(grep -A3 'summary of' "$tmp/gjs-loop-run.log")"
  elif [ "$(fingerprint gjs-loop-run)" != "$(fingerprint gjs-again)" ] \
       || [ "$(fingerprint gjs-loop-run)" = "$(fingerprint gjs-other)" ]; then
    fail "gjs: fingerprints: $(fingerprint gjs-loop-run) and, run again, $(fingerprint gjs-again); other handler $(fingerprint gjs-other)"
  elif ! lag_check "$tmp/gjs-other.jsonl" '[.stack[] | select(.lang == "javascript") | .symbol] | index("jsOtherHandler") == 1'; then
    fail "gjs: the other handler is not named: $(jq -c "$lag | [.stack[] | select(.lang) | .symbol]" "$tmp/gjs-other.jsonl")"
  elif ! lag_check "$tmp/gjs-off.jsonl" '[.stack[] | select(.lang == "javascript")] | length == 0'; then
    fail "gjs: LAGWATCH_JS_FRAMES=0 still names JavaScript functions"
  else
    echo "ok gjs-names: $js; fingerprints $(fingerprint gjs-loop-run) (again: $(fingerprint gjs-again)), other $(fingerprint gjs-other)"
  fi
fi
# An unnamed source is named by its callback's function; a name set with
# g_source_set_name() wins.
if run c-dlsym-loop "$dlsym_loop"; then
  lag='select(.event == "lag" and .duration_ms >= 250)'
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
  if ! jq -s -e 'map(select(.event == "lag" and .duration_ms >= 250)) | length == 1 and (.[0] | .source == "dlsym-loop: named freeze" and .source_callback == null)' \
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
