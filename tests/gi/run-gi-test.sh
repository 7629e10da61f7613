#!/bin/sh
# run-gi-test.sh INTERPRETER SCRIPT TYPELIB_DIR LIB_DIR: runs a TAP test
# script of the introspected API (tests/gi/test-gi-api.py or .js) on a real
# interpreter against the build's typelib and library; its TAP goes to
# meson. Without the interpreter, one visible skip.
set -u
interpreter=$1 script=$2 typelib_dir=$3 lib_dir=$4

if ! command -v "$interpreter" > /dev/null; then
  echo "1..0 # SKIP $interpreter is not installed (scripts/setup-and-test installs it)"
  exit 0
fi
# An ASan build of the library in an uninstrumented interpreter needs ASan's
# runtime first; the interpreters' own leaks are not ours to report.
preload=${LW_ASAN_RUNTIME:+$LW_ASAN_RUNTIME${LD_PRELOAD:+:$LD_PRELOAD}}
LD_PRELOAD=${preload:-${LD_PRELOAD:-}} ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
  GI_TYPELIB_PATH="$typelib_dir${GI_TYPELIB_PATH:+:$GI_TYPELIB_PATH}" \
  LD_LIBRARY_PATH="$lib_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  exec timeout 150 "$interpreter" "$script"
