#!/bin/sh
# run-gi-example.sh INTERPRETER EXAMPLE TYPELIB_DIR LIB_DIR: runs one of the
# GObject Introspection examples (examples/gi-example.py or .js) on a real
# interpreter against the build's typelib and library, and checks (TAP) that
# it got one report of its 300 ms freeze, with a stack, emitted on the thread
# running the loop, and exited 0; and that each frame carries its language,
# inlined flag and program flag (LagWatch.Frame's language, inlined,
# is_program): the Python example's handler is a Python frame of the
# program, and the innermost program frame; that the report names the
# handler as the g_timeout_add callback of the lag, of priority 0; and that
# a threshold of 0 was refused with a GLib.Error.
set -u
interpreter=$1 example=$2 typelib_dir=$3 lib_dir=$4

echo "1..6"
if ! command -v "$interpreter" > /dev/null; then
  echo "ok 1 # SKIP $interpreter is not installed (scripts/setup-and-test installs it)"
  for n in 2 3 4 5 6; do echo "ok $n # SKIP"; done
  exit 0
fi
out=$(mktemp "${TMPDIR:-/tmp}/lagwatch-gi.XXXXXX")
trap 'rm -f "$out"' EXIT
# An ASan build of the library in an uninstrumented interpreter needs ASan's
# runtime first; the interpreters' own leaks are not ours to report.
preload=${LW_ASAN_RUNTIME:+$LW_ASAN_RUNTIME${LD_PRELOAD:+:$LD_PRELOAD}}
LD_PRELOAD=${preload:-${LD_PRELOAD:-}} ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
  GI_TYPELIB_PATH="$typelib_dir${GI_TYPELIB_PATH:+:$GI_TYPELIB_PATH}" \
  LD_LIBRARY_PATH="$lib_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  timeout 120 "$interpreter" "$example" > "$out" 2>&1
status=$?
sed 's/^/# /' "$out"

if [ "$status" -eq 0 ]; then echo "ok 1 - $example exited 0"; else echo "not ok 1 - $example exited $status"; fi
header=$(grep -E '^report [0-9]+-[0-9]+: ' "$out")
if [ "$(printf '%s\n' "$header" | grep -c .)" -eq 1 ] \
   && printf '%s\n' "$header" | awk '{ d = $3 + 0; exit !(d >= 250 && d <= 2000) }' \
   && printf '%s\n' "$header" | grep -Eq '\(threshold 100 ms\), [1-9][0-9]* frames, '; then
  echo "ok 2 - one report of the freeze, 250 ms or more, with a stack: $header"
else
  echo "not ok 2 - one report of the freeze, 250 ms or more, with a stack (got: $header)"
fi
if printf '%s\n' "$header" | grep -q "on the loop's thread: yes\$"; then
  echo "ok 3 - the report signal ran on the thread running the loop"
else
  echo "not ok 3 - the report signal ran on the thread running the loop"
fi
# Every frame line ends with [LANGUAGE(, inlined)(, program)].
frames=$(grep -E '^  #[0-9]+ ' "$out")
untagged=$(printf '%s\n' "$frames" | grep -cvE ' \[(native|python|javascript)(, inlined)?(, program)?\]$')
case "$example" in
  *.py) want='^  #[0-9]+ +slow_handler \(.*gi-example\.py \+0x0\) \[python, program\]$'
        where='innermost program frame: slow_handler' ;;
  *) want=' \[(native|javascript)' where='innermost program frame: ' ;;
esac
if [ -n "$frames" ] && [ "$untagged" -eq 0 ] && printf '%s\n' "$frames" | grep -Eq "$want" \
   && grep -q "^$where" "$out"; then
  echo "ok 4 - each frame has its language, inlined and program flags; $(grep '^innermost program frame' "$out")"
else
  echo "not ok 4 - each frame has its language, inlined and program flags (want a frame matching '$want' and '$where'; $untagged frames without them)"
fi
case "$example" in
  *.py) handler=slow_handler ;;
  *) handler=slowHandler ;;
esac
cause=$(grep -E '^lag in ' "$out")
if printf '%s\n' "$cause" | grep -Eq "^lag in g_timeout_add callback $handler, priority 0, caught after [0-9]+ ms, occurrence 1\$"; then
  echo "ok 5 - the report names its kind, the source's callback and priority: $cause"
else
  echo "not ok 5 - the report names its kind, the source's callback ($handler) and priority (got: $cause)"
fi
if grep -q '^a threshold of 0 is refused: threshold 0 is out of range' "$out"; then
  echo "ok 6 - a threshold of 0 is refused with a GLib.Error"
else
  echo "not ok 6 - a threshold of 0 is refused with a GLib.Error"
fi
