# common.sh: sourced by the scripts in this folder. Installs what the build
# and the tests need (on Debian 12, 13 and unstable) and configures a build dir.

LW_ROOT=$(cd "$(dirname "$0")/.." && pwd)

# The demo alone (scripts/run-demo): the compilers, meson, the libraries of
# the design card (+ libdw for file:line, zlib for debug files' CRC-32,
# libsystemd's header for the journal sink, libiberty for Rust names), GTK 4
# and json-glib, and to run it without a
# display Xvfb, xauth, xdotool and ImageMagick (screenshots).
LW_DEMO_PACKAGES="gcc meson ninja-build pkg-config
  libglib2.0-dev libunwind-dev libunwind8 libelf-dev libdw-dev zlib1g-dev libsystemd-dev
  libiberty-dev libjson-glib-dev libgtk-4-dev xvfb xauth xdotool imagemagick"

# The whole suite, beyond the demo's: json-glib to read JSON Lines, binutils
# for nm/objcopy/readelf, libc6-dbg for glibc's static functions, rustc and
# g++ for the name tests, gtk4-widget-factory (gtk-4-examples) for the
# launcher's test (from GTK 4.24 it aborts without GStreamer's playbin3:
# gstreamer1.0-plugins-base), jq, valgrind's callgrind for the overhead benchmark, clang
# and its runtimes for the fuzz targets (libFuzzer, ASan, UBSan),
# lagwatch-report on python3 (stdlib only) naming frames offline with
# eu-addr2line (elfutils), its types checked with mypy --strict (Debian 12's
# mypy 1.0, 13's 1.15 and unstable's 2.x all pass), its HTML tested in
# headless chromium, its speedscope export opened there by speedscope's own
# web app (npm installs it at test time; Debian's npm brings nodejs), journal files
# read with journalctl; the journal sink's test runs systemd-journald,
# systemd-journal-upload and -remote in a namespace (ip, ss: iproute2;
# mount, which every Debian system has, named all the same); the
# GI bindings with python3-gi and gjs, their API reference with gi-docgen;
# Sysprof's capture library and reader; locales (the sources localedef
# needs) for the stats record under a decimal-comma locale.
# The names that differ between releases come from lw_release_packages.
# npm only where there is none: NodeSource's nodejs brings its own npm and
# conflicts with Debian's.
LW_NPM_PACKAGE=$(command -v npm > /dev/null || echo npm)
LW_TEST_PACKAGES="g++ binutils libc6-dbg rustc
  gir1.2-gtk-4.0 jq gtk-4-examples gstreamer1.0-plugins-base libgtk-4-1 valgrind clang
  python3 python3-jsonschema mypy elfutils chromium $LW_NPM_PACKAGE systemd-journal-remote sysprof systemd iproute2 mount gi-docgen
  gobject-introspection libgirepository1.0-dev python3-gi gjs locales"

# ThreadSanitizer's run (scripts/run-tsan) builds GLib from its Debian
# source package: dpkg-dev unpacks it (apt-get source), and GLib's build
# needs libffi, PCRE2, zlib and, from GLib 2.80 (Debian 13) on, Python's
# packaging module; gcc's ThreadSanitizer runtime is libtsan2 on Debian 12,
# 13 and unstable.
LW_TSAN_PACKAGES="dpkg-dev libtsan2 libffi-dev libpcre2-dev zlib1g-dev python3-packaging"

# lw_codename: the Debian release this machine runs (sid calls itself by
# the name of the next release, as its os-release does).
lw_codename() {
  (. /etc/os-release && echo "${VERSION_CODENAME:-unknown}")
}

# lw_has_candidate PACKAGE: apt's lists hold a version of PACKAGE itself.
# apt-cache reads a name with a dot as a pattern ("python3.15" finds
# postgresql-plpython3-15 on Debian 12): only PACKAGE's own entry counts.
lw_has_candidate() {
  apt-cache policy "$1" 2> /dev/null | awk -v entry="$1:" '
    $0 == entry { own = 1; next }
    /^[^ ]/ { own = 0 }
    own && /Candidate: [^(]/ { found = 1 }
    END { exit !found }'
}

# lw_release_packages: the packages whose names changed between releases,
# read from apt's lists when they have them, else from the release's name.
#  - clang's runtimes (libFuzzer, sanitizers) are versioned with clang:
#    libclang-rt-14-dev on Debian 12, -19- on 13, clang's own version after.
#  - Sysprof's capture library: libsysprof-4-dev on Debian 12,
#    libsysprof-capture-4-dev from 13 on.
#  - The CPythons: python3.11 on Debian 12, python3.13 on 13, python3.14
#    and python3.15 on unstable.
lw_release_packages() {
  clang=$(apt-cache depends clang 2> /dev/null | sed -n 's/^ *Depends: clang-\([0-9][0-9]*\)$/\1/p' | head -n 1)
  if [ -z "$clang" ]; then
    case $(lw_codename) in
      bookworm) clang=14 ;;
      *) clang=19 ;;
    esac
  fi
  # A real package, not a name another provides (Debian 12's
  # libsysprof-4-dev provides libsysprof-capture-4-dev).
  if lw_has_candidate libsysprof-capture-4-dev; then
    sysprof=libsysprof-capture-4-dev
  elif lw_has_candidate libsysprof-4-dev; then
    sysprof=libsysprof-4-dev
  else
    case $(lw_codename) in
      bookworm) sysprof=libsysprof-4-dev ;;
      *) sysprof=libsysprof-capture-4-dev ;;
    esac
  fi
  # Each CPython lagwatch reads that the release ships beside its default
  # one (Debian unstable: the next release's python3.N), for the suite's
  # test of every CPython here (python-versions).
  pythons=""
  for minor in 11 12 13 14 15; do
    if lw_has_candidate "python3.$minor"; then pythons="$pythons python3.$minor"; fi
  done
  echo "libclang-rt-$clang-dev $sysprof$pythons"
}

# lw_missing PACKAGES...: those not installed.
lw_missing() {
  for package in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2> /dev/null | grep -q "install ok installed"; then
      printf ' %s' "$package"
    fi
  done
}

# lw_ensure_packages [--demo | --tsan]: installs the missing packages (the
# demo's only, with --demo; the suite's and ThreadSanitizer's, with --tsan)
# when root; otherwise prints the commands that install them and stops.
lw_ensure_packages() {
  scope=${1:-all}
  extra=""
  [ "$scope" = --tsan ] && extra=$LW_TSAN_PACKAGES
  # shellcheck disable=SC2086
  if [ "$scope" = --demo ]; then
    missing=$(lw_missing $LW_DEMO_PACKAGES)
  else
    missing=$(lw_missing $LW_DEMO_PACKAGES $LW_TEST_PACKAGES $extra $(lw_release_packages))
  fi
  [ -z "$missing" ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "lagwatch needs these Debian packages:$missing"
    echo "install them (as root, or with sudo), then run this again:"
    echo "  sudo sh -c 'apt-get update && apt-get install --no-install-recommends$missing'"
    exit 1
  fi
  echo "installing:$missing"
  apt-get update -q
  if [ "$scope" != --demo ]; then
    # Now that apt's lists are fresh, the release's own names.
    # shellcheck disable=SC2086
    missing=$(lw_missing $LW_DEMO_PACKAGES $LW_TEST_PACKAGES $extra $(lw_release_packages))
  fi
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
}

# lw_configure DIR [MESON OPTIONS...]: sets up (or refreshes) a build dir.
# --wrap-mode=nodownload: the GLib wrap is a fallback, never a download.
lw_configure() {
  dir=$1; shift
  if [ -f "$LW_ROOT/$dir/build.ninja" ]; then
    meson setup --reconfigure "$LW_ROOT/$dir" "$LW_ROOT" --wrap-mode=nodownload "$@" > /dev/null
  else
    meson setup "$LW_ROOT/$dir" "$LW_ROOT" --wrap-mode=nodownload "$@"
  fi
}
