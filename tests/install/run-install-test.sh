#!/bin/sh
# run-install-test.sh BUILD_ROOT SOURCE_DIR PREFIX BINDIR LIBDIR [MESON]
# What the README's "Using it in an application" and "Install" promise,
# as a user would do it (TAP):
#  1. a program built against the build tree's uninstalled pkg-config file
#     (meson-uninstalled/) attaches lagwatch and gets its report;
#  2. `meson install` into a DESTDIR whose path holds a space: the installed
#     launcher runs with no LD_LIBRARY_PATH and no ldconfig, finds its
#     preload library, and a lag of an unmodified program is written;
#     a preload path the loader cannot be given is refused;
#  3. the installed lagwatch-report names its cause;
#  4. the installed pkg-config file (moved with the DESTDIR) builds the
#     same program.
# Environment: CC (the build's C compiler), PKG_CONFIG.
# The compiler command and compiler flags are split into words on purpose.
# shellcheck disable=SC2086,SC2046
set -u
build=$1 srcdir=$2 prefix=$3 bindir=$4 libdir=$5 meson=${6:-}
cc=${CC:-cc}
pkg_config=${PKG_CONFIG:-pkg-config}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
status=0
ok() { n=$((n + 1)); echo "ok $n $*"; }
not_ok() { n=$((n + 1)); echo "not ok $n $*"; status=1; }
skip() { n=$((n + 1)); echo "ok $n # SKIP $*"; }
show() { for file in "$@"; do [ -f "$file" ] && sed 's/^/# /' "$file"; done; }

# In an ASan build every program that loads liblagwatch needs ASan's
# runtime loaded first (these programs are not instrumented).
if [ -n "${LW_ASAN_RUNTIME:-}" ]; then
  export LD_PRELOAD="$LW_ASAN_RUNTIME"
  export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
fi
export LAGWATCH_THRESHOLD_MS=100
unset LAGWATCH_OUTPUT LAGWATCH_DISABLE
# meson test points LD_LIBRARY_PATH at the build tree, which would hide
# whether the installed files find each other on their own.
unset LD_LIBRARY_PATH

echo "1..6"

# 1. The build tree, as `meson devenv` or PKG_CONFIG_PATH sets it up.
uninstalled="$build/meson-uninstalled"
if flags=$(PKG_CONFIG_PATH="$uninstalled" $pkg_config --cflags --libs lagwatch 2> "$tmp/err") &&
   $cc -DLAG_ONCE_ATTACH -o "$tmp/app-uninstalled" "$srcdir/lag-once.c" $flags 2>> "$tmp/err"; then
  libpath=$(PKG_CONFIG_PATH="$uninstalled" $pkg_config --libs-only-L lagwatch | sed 's/-L//g; s/ *$//; s/  */:/g')
  if LD_LIBRARY_PATH="$libpath" "$tmp/app-uninstalled" > "$tmp/out" 2> "$tmp/err" &&
     grep -q "^reported lag of [0-9]* ms" "$tmp/out"; then
    ok "built with the uninstalled pkg-config file: $(cat "$tmp/out")"
  else
    not_ok "the program built with the uninstalled pkg-config file got no report"
    show "$tmp/out" "$tmp/err"
  fi
else
  not_ok "cannot build against $uninstalled/lagwatch-uninstalled.pc"
  show "$tmp/err"
fi

# 2. meson install into a DESTDIR whose path holds a space.
if [ -z "$meson" ]; then
  skip "meson not found: no install to check"
  skip "meson not found"; skip "meson not found"; skip "meson not found"; skip "meson not found"
  exit $status
fi
dest="$tmp/dest dir"
if ! "$meson" install -C "$build" --no-rebuild --quiet --destdir "$dest" > "$tmp/install.log" 2>&1; then
  not_ok "meson install --destdir failed"
  show "$tmp/install.log"
  exit 1
fi
case $libdir in /*) ;; *) libdir=$prefix/$libdir ;; esac
case $bindir in /*) ;; *) bindir=$prefix/$bindir ;; esac
launcher="$dest$bindir/lagwatch"
runpath=$(readelf -d "$launcher" 2> /dev/null | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
# Under /usr the loader finds the library on its own (no RUNPATH, as a
# distribution package): LD_LIBRARY_PATH stands in for that here.
if [ "$prefix" = /usr ]; then
  export LD_LIBRARY_PATH="$dest$libdir"
fi
if "$launcher" --version > "$tmp/out" 2> "$tmp/err"; then
  ok "installed launcher runs without LD_LIBRARY_PATH or ldconfig (RUNPATH ${runpath:-none}): $(cat "$tmp/out")"
else
  not_ok "installed launcher does not run (RUNPATH ${runpath:-none})"
  show "$tmp/err"
fi

# 3. The installed launcher on an unmodified GLib program; its JSON Lines.
json="$tmp/lags.jsonl"
if $cc -g -o "$tmp/plain" "$srcdir/lag-once.c" $($pkg_config --cflags --libs glib-2.0) 2> "$tmp/err" &&
   "$launcher" --output "json:$json" -- "$tmp/plain" > "$tmp/out" 2> "$tmp/err" &&
   grep -q '"event": *"lag"' "$json" 2> /dev/null && grep -q 'lag-once: freeze' "$json"; then
  ok "installed launcher: the lag of an unmodified program written to JSON Lines"
else
  not_ok "installed launcher: no lag record"
  show "$tmp/out" "$tmp/err" "$json"
fi

# A preload library the loader cannot be given (':' in its directory):
# refused with a message before PROGRAM runs. A real copy of the library,
# so that it is refused for its path, not for being missing.
mkdir "$tmp/a:b"
cp "$(find "$dest" -name liblagwatch-preload.so | head -n 1)" "$tmp/a:b/"
LAGWATCH_PRELOAD_LIBRARY="$tmp/a:b/liblagwatch-preload.so" "$launcher" -- /bin/true 2> "$tmp/err"
code=$?
if [ "$code" -eq 2 ] && grep -q "cannot preload" "$tmp/err"; then
  ok "a preload path with ':' in its directory: $(cat "$tmp/err")"
else
  not_ok "a preload path with ':' in its directory: status $code"
  show "$tmp/err"
fi

# 4. The installed report tool names the cause.
if [ -f "$json" ] && "$dest$bindir/lagwatch-report" --no-symbolize "$json" > "$tmp/report" 2> "$tmp/err" &&
   grep -q "lag_once_freeze" "$tmp/report"; then
  ok "installed lagwatch-report: $(grep -m 1 'lag_once_freeze' "$tmp/report" | sed 's/  */ /g')"
else
  not_ok "installed lagwatch-report does not name lag_once_freeze"
  show "$tmp/report" "$tmp/err"
fi

# 5. The installed pkg-config file, its prefix moved into the DESTDIR
# (through a link without the space: compiler flags split at spaces).
ln -s "$dest" "$tmp/dest"
mkdir "$tmp/pkgconfig"
sed "s|^prefix=.*|prefix=$tmp/dest$prefix|" "$dest$libdir/pkgconfig/lagwatch.pc" > "$tmp/pkgconfig/lagwatch.pc"
if flags=$(PKG_CONFIG_PATH="$tmp/pkgconfig" $pkg_config --cflags --libs lagwatch 2> "$tmp/err") &&
   $cc -DLAG_ONCE_ATTACH -o "$tmp/app-installed" "$srcdir/lag-once.c" $flags 2>> "$tmp/err" &&
   LD_LIBRARY_PATH="$tmp/dest$libdir" "$tmp/app-installed" > "$tmp/out" 2>> "$tmp/err" &&
   grep -q "^reported lag of [0-9]* ms" "$tmp/out"; then
  ok "built with the installed pkg-config file: $(cat "$tmp/out")"
else
  not_ok "cannot build and run against the installed lagwatch.pc"
  show "$tmp/pkgconfig/lagwatch.pc" "$tmp/out" "$tmp/err"
fi
exit $status
