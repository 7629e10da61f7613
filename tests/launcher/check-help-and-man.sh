#!/bin/sh
# check-help-and-man.sh LAUNCHER SRCDIR (TAP): what a user reads about the
# launcher says what it does.
#   - `lagwatch --help` lists the sinks, and the launcher accepts each one
#     it lists (syscap: only where the build has Sysprof's capture library);
#   - the manual page (man/lagwatch.1, installed) lists the same sinks;
#   - every LAGWATCH_* variable the library reads (its getenv calls and its
#     configuration readers in lib/) is in the manual page's ENVIRONMENT and
#     in the README's settings table.
set -u
launcher=$1
srcdir=$2
man=$srcdir/man/lagwatch.1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lagwatch-help.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
n=0
status=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $*"; status=1; }
echo "1..4"
# Under an ASan build the preloaded library needs ASan's runtime loaded
# first in the uninstrumented program it is preloaded into (true).
if [ -n "${LW_ASAN_RUNTIME:-}" ]; then
  export LD_PRELOAD="$LW_ASAN_RUNTIME${LD_PRELOAD:+:$LD_PRELOAD}"
fi

"$launcher" --help > "$tmp/help" 2>&1
# The sinks block: "  NAME   what it is", up to the first empty line.
sed -n '/^Sinks /,/^$/p' "$tmp/help" | sed -nE 's/^  ([a-z]+:?(PATH)?) .*/\1/p' > "$tmp/sinks"
if [ "$(wc -l < "$tmp/sinks")" -ge 4 ]; then
  bad=""
  for sink in $(cat "$tmp/sinks"); do
    spec=$(printf '%s' "$sink" | sed "s|PATH\$|$tmp/out-${sink%%:*}|")
    if ! "$launcher" --output "$spec" -- true > "$tmp/run" 2>&1; then
      grep -q "built without" "$tmp/run" || bad="$bad $sink ($(head -n 1 "$tmp/run"))"
    fi
  done
  if [ -z "$bad" ]; then
    ok "--help lists the sinks, each accepted by --output: $(tr '\n' ' ' < "$tmp/sinks")"
  else
    not_ok "--help lists a sink --output refuses:$bad"
  fi
else
  not_ok "--help lists the sinks (got: $(tr '\n' ' ' < "$tmp/sinks"))"
  sed 's/^/# /' "$tmp/help"
fi

missing=""
for sink in $(cat "$tmp/sinks"); do
  name=${sink%%:*}
  grep -Eq "^\\.B[IR]? ${name}(:| |\$)" "$man" || missing="$missing $sink"
done
if [ -z "$missing" ] && [ -s "$tmp/sinks" ]; then
  ok "the manual page lists every sink of --help"
else
  not_ok "the manual page does not list:$missing"
fi

# Variables the library reads; LAGWATCH_LAUNCHER_PROCESS is the launcher's
# word to the preloaded library, not a setting.
grep -rhoE '(getenv|lw_config_env_[a-z]+) \("LAGWATCH_[A-Z_]+"' "$srcdir/lib" \
  | sed -E 's/.*"(LAGWATCH_[A-Z_]+)"/\1/' | sort -u | grep -vx LAGWATCH_LAUNCHER_PROCESS > "$tmp/read"
sed -n '/^\.SH ENVIRONMENT/,/^\.SH /p' "$man" > "$tmp/environment"
missing=""
for var in $(cat "$tmp/read"); do
  grep -Eq "^\\.BR? $var( |\$)" "$tmp/environment" || missing="$missing $var"
done
if [ -z "$missing" ] && [ "$(wc -l < "$tmp/read")" -ge 10 ]; then
  ok "the manual page's ENVIRONMENT has the $(wc -l < "$tmp/read") variables the library reads"
else
  not_ok "the manual page's ENVIRONMENT lacks:$missing (read: $(tr '\n' ' ' < "$tmp/read"))"
fi

missing=""
for var in $(cat "$tmp/read"); do
  grep -q "^| \`$var\` |" "$srcdir/README.md" || missing="$missing $var"
done
if [ -z "$missing" ]; then
  ok "the README's settings table has every variable the library reads"
else
  not_ok "the README's settings table lacks:$missing"
fi
exit $status
