# common.sh: sourced by the scripts in this folder. Installs what the build
# and the tests need (Debian 12 package names) and configures a build dir.

LW_ROOT=$(cd "$(dirname "$0")/.." && pwd)

# Build: compilers, meson, the three libraries of the design card (+ libdw,
# used from the symbolization work on, and zlib for debug files' CRC-32).
# Tests: json-glib to read JSON Lines, binutils for nm/objcopy/readelf,
# libc6-dbg for glibc's static functions.
# The GTK 4 demo; its test and run-demo without a display: Xvfb, xauth,
# xdotool, ImageMagick (screenshots), jq (JSON Lines). The launcher's test
# runs gtk4-widget-factory (gtk-4-examples); the overhead benchmark counts
# instructions with valgrind's callgrind. The fuzz targets (scripts/run-fuzz)
# need clang and its runtimes (libFuzzer, ASan, UBSan). lagwatch-report runs on python3
# (stdlib only) and names frames offline with eu-addr2line (elfutils); its
# HTML is tested in headless chromium; it reads journal files (as
# systemd-journal-remote writes them) with journalctl. The journal sink: libsystemd's
# header (the library is dlopen()ed); its test runs systemd-journald,
# systemd-journal-upload and -remote in a namespace (ip, ss: iproute2).
LW_PACKAGES="gcc g++ meson ninja-build pkg-config binutils
  libglib2.0-dev libunwind-dev libunwind8 libelf-dev libdw-dev zlib1g-dev
  libjson-glib-dev libc6-dbg libiberty-dev rustc
  libgtk-4-dev gir1.2-gtk-4.0 xvfb xauth xdotool imagemagick jq gtk-4-examples libgtk-4-1 valgrind
  clang libclang-rt-14-dev
  python3 elfutils chromium systemd-journal-remote libsysprof-4-dev sysprof
  libsystemd-dev systemd iproute2
  gobject-introspection libgirepository1.0-dev python3-gi gjs"

# lw_ensure_packages: installs the missing packages when root; otherwise
# prints the apt-get line and stops.
lw_ensure_packages() {
  missing=""
  for package in $LW_PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
      missing="$missing $package"
    fi
  done
  [ -z "$missing" ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "lagwatch needs these Debian packages:$missing"
    echo "install them, then run this again:"
    echo "  sudo apt-get install --no-install-recommends$missing"
    exit 1
  fi
  echo "installing:$missing"
  apt-get update -q
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
