#!/bin/sh
# run-gjs-names.sh PROGRAM TYPELIB_DIR LIB_DIR: runs gjs-names.js on the
# installed gjs against the build's typelib and library, and checks (TAP)
# that the report of its 300 ms freeze names the JavaScript functions that
# held the loop, innermost first, each with its script and the line of its
# definition: jsSpinFor, then jsSlowHandler (the handler), read from
# SpiderMonkey's profiling stack, whatever the SpiderMonkey release; and
# that lagwatch said nothing about a SpiderMonkey it cannot read.
set -u
program=$1 typelib_dir=$2 lib_dir=$3

echo "1..3"
if ! command -v gjs > /dev/null; then
  echo "ok 1 # SKIP gjs is not installed (scripts/setup-and-test installs it)"
  echo "ok 2 # SKIP"; echo "ok 3 # SKIP"
  exit 0
fi
out=$(mktemp "${TMPDIR:-/tmp}/lagwatch-gjs-names.XXXXXX")
trap 'rm -f "$out"' EXIT
engine=$(ldd "$(command -v gjs)" 2> /dev/null | grep -o 'libmozjs-[0-9]*' | head -n 1)
preload=${LW_ASAN_RUNTIME:+$LW_ASAN_RUNTIME${LD_PRELOAD:+:$LD_PRELOAD}}
LD_PRELOAD=${preload:-${LD_PRELOAD:-}} ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
  GI_TYPELIB_PATH="$typelib_dir${GI_TYPELIB_PATH:+:$GI_TYPELIB_PATH}" \
  LD_LIBRARY_PATH="$lib_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  timeout 120 gjs "$program" > "$out" 2>&1
status=$?
sed 's/^/# /' "$out"

if [ "$status" -eq 0 ] && grep -q '^END$' "$out"; then
  echo "ok 1 - a report of the freeze ($engine)"
else
  echo "not ok 1 - a report of the freeze ($engine): exit status $status"
fi
line_of() { grep -n "^function $1(" "$program" | cut -d: -f1; }
base=${program##*/}
js=$(grep '^FRAME javascript ' "$out" | awk '{ n = split($4, p, "/"); print $3, p[n], $5 }' | head -n 2 | tr '\n' ';')
expected="jsSpinFor $base $(line_of jsSpinFor);jsSlowHandler $base $(line_of jsSlowHandler);"
if [ "$js" = "$expected" ]; then
  echo "ok 2 - the handler's functions are named, with file and line ($engine): $js"
else
  echo "not ok 2 - the handler's functions are named, with file and line ($engine): got '$js', expected '$expected'"
fi
if grep -q 'SpiderMonkey' "$out"; then
  echo "not ok 3 - no message about the SpiderMonkey release: $(grep 'SpiderMonkey' "$out")"
else
  echo "ok 3 - no message about the SpiderMonkey release ($engine)"
fi
