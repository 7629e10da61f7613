#!/bin/sh
# run-frames-test.sh TEST: runs the GTK 4 test program TEST (TAP) on its own
# Xvfb, with its own cookie, through GDK's X11 backend and the cairo
# renderer (Xvfb has no GPU: GL through llvmpipe would compile shaders on
# the main thread, lags of its own).
set -eu

for tool in Xvfb xauth mcookie; do
  if ! command -v "$tool" > /dev/null; then
    echo "1..0 # SKIP $tool is not installed (scripts/setup-and-test installs what is missing)"
    exit 0
  fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/lagwatch-frames-test.XXXXXX")
xvfb_pid=""
cleanup() {
  [ -z "$xvfb_pid" ] || kill "$xvfb_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# Xvfb picks a free display number itself (-displayfd) and loads the
# cookie from the file at start; the cookie is then filed under that number.
cookie=$(mcookie)
: > "$tmp/xauthority"
xauth -q -f "$tmp/xauthority" add :0 . "$cookie"
Xvfb -displayfd 3 -auth "$tmp/xauthority" -nolisten tcp -screen 0 1024x768x24 \
  3> "$tmp/display" 2> "$tmp/xvfb.log" &
xvfb_pid=$!
end=$(($(date +%s) + 30))
until [ -s "$tmp/display" ]; do
  if [ "$(date +%s)" -ge "$end" ]; then
    echo "Bail out! Xvfb did not start: $(tail -n 3 "$tmp/xvfb.log" | tr '\n' ' ')"
    exit 1
  fi
  sleep 0.05
done
DISPLAY=:$(cat "$tmp/display")
xauth -q -f "$tmp/xauthority" add "$DISPLAY" . "$cookie"
XAUTHORITY=$tmp/xauthority
export DISPLAY XAUTHORITY

unset WAYLAND_DISPLAY LAGWATCH_DISABLE LAGWATCH_THRESHOLD_MS LAGWATCH_HANG_MS LAGWATCH_OUTPUT
# GTK_A11Y=none: no accessibility bus (there is no session bus to find it on).
export GDK_BACKEND=x11 GSK_RENDERER=cairo GTK_A11Y=none
here=$(cd "$(dirname "$0")" && pwd)
export LSAN_OPTIONS="${LSAN_OPTIONS:-}:suppressions=$here/../demo/lsan-demo.supp"
"$1" --tap
