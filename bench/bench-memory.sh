#!/bin/sh
# bench-memory.sh LAUNCHER PRELOAD [--short]: what lagwatch's first report
# costs in memory, in a real GTK application: gtk4-widget-factory in Xvfb,
# under the launcher (JSON Lines sink, line info with libdw when built with
# it), side by side with the same program without lagwatch. PRELOAD
# (memory-lag.c) makes one 300 ms lag a second after the window is up and
# reads /proc/self/smaps_rollup before it and once the first report is
# written (500 ms after it without lagwatch). Reports, per run, the RSS and
# anonymous memory before the lag and their growth to after the report,
# and the medians: lagwatch's attached state (its "before" over the
# program's) and its first report (its growth over the program's own).
# Never fails on the figures (a benchmark reports); fails if a run gives
# none. --short: 1 run of each, else 5.
set -eu
launcher=$1
preload=$2
runs=5
[ "${3:-}" = --short ] && runs=1
for tool in Xvfb xauth mcookie gtk4-widget-factory; do
  if ! command -v "$tool" > /dev/null; then
    echo "bench-memory: SKIP: $tool is not installed"
    exit 77
  fi
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lagwatch-bench-memory.XXXXXX")
xvfb_pid=""
cleanup() {
  [ -z "$xvfb_pid" ] || kill "$xvfb_pid" 2> /dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

cookie=$(mcookie)
: > "$tmp/xauthority"
xauth -q -f "$tmp/xauthority" add :0 . "$cookie"
Xvfb -displayfd 3 -auth "$tmp/xauthority" -nolisten tcp -screen 0 1280x800x24 3> "$tmp/display" 2> /dev/null &
xvfb_pid=$!
end=$(($(date +%s) + 30))
until [ -s "$tmp/display" ]; do
  [ "$(date +%s)" -lt "$end" ] || { echo "bench-memory: Xvfb did not start"; exit 1; }
  sleep 0.05
done
export DISPLAY=:$(cat "$tmp/display") XAUTHORITY="$tmp/xauthority" GDK_BACKEND=x11 GSK_RENDERER=cairo
xauth -q -f "$tmp/xauthority" add "$DISPLAY" . "$cookie"
unset WAYLAND_DISPLAY LAGWATCH_DISABLE LAGWATCH_OUTPUT

# run MODE N: one run of the widget factory; its line in $tmp/MODE-N.
run() {
  out=$tmp/$1-$2
  rm -f "$out" "$tmp/lags.json"
  if [ "$1" = lagwatch ]; then
    LW_BENCH_OUT=$out LW_BENCH_JSON=$tmp/lags.json LD_PRELOAD=$preload \
      timeout 120 "$launcher" --threshold 250 --output "json:$tmp/lags.json" -- gtk4-widget-factory > /dev/null 2>&1 || true
  else
    LW_BENCH_OUT=$out LD_PRELOAD=$preload timeout 120 gtk4-widget-factory > /dev/null 2>&1 || true
  fi
  [ -s "$out" ] || { echo "bench-memory: the $1 run $2 gave no figures"; exit 1; }
}

i=1
while [ "$i" -le "$runs" ]; do
  run plain "$i"
  run lagwatch "$i"
  i=$((i + 1))
done
awk -v runs="$runs" '
  function median(a, n,   i, j, t) {
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  {
    split(FILENAME, p, "/"); split(p[length(p)], m, "-"); mode = m[1]; n = m[2]
    for (f = 1; f <= NF; f++) { split($f, kv, "="); v[mode, n, kv[1]] = kv[2] }
  }
  END {
    kept = 0
    for (n = 1; n <= runs; n++) {
      plain_growth = v["plain", n, "after_rss_kib"] - v["plain", n, "before_rss_kib"]
      lw_growth = v["lagwatch", n, "after_rss_kib"] - v["lagwatch", n, "before_rss_kib"]
      lw_anon = v["lagwatch", n, "after_anon_kib"] - v["lagwatch", n, "before_anon_kib"]
      plain_anon = v["plain", n, "after_anon_kib"] - v["plain", n, "before_anon_kib"]
      printf "run %d: without lagwatch: RSS %.1f MiB, then +%.1f MiB over the lag; with: RSS %.1f MiB, then +%.1f MiB (anonymous +%.1f) to its report", n,
        v["plain", n, "before_rss_kib"] / 1024, plain_growth / 1024, v["lagwatch", n, "before_rss_kib"] / 1024, lw_growth / 1024, lw_anon / 1024
      if (v["lagwatch", n, "earlier"] > 0) {
        printf " (not counted: %d lag(s) of the start-up were reported before it)\n", v["lagwatch", n, "earlier"]
        continue
      }
      printf "\n"
      kept++
      attach[kept] = (v["lagwatch", n, "before_rss_kib"] - v["plain", n, "before_rss_kib"]) / 1024
      first[kept] = (lw_growth - plain_growth) / 1024
      firstanon[kept] = (lw_anon - plain_anon) / 1024
    }
    if (kept == 0) {
      print "no run had its first report from the lag of the benchmark: start-up lags came first every time"
      exit 0
    }
    printf "median of %d: attached +%.1f MiB RSS over the program alone; first report +%.1f MiB RSS (+%.1f MiB anonymous) over the program'"'"'s own growth\n", kept, median(attach, kept), median(first, kept), median(firstanon, kept)
  }' "$tmp"/plain-* "$tmp"/lagwatch-*
