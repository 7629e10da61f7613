#!/bin/sh
# split-debug.sh OBJCOPY READELF INPUT STRIPPED DEBUG_ROOT STAMP
#
# Strips INPUT into STRIPPED and stores its debug part where a debugger (and
# lagwatch) looks it up by build-id: DEBUG_ROOT/.build-id/xx/rest.debug.
# The root is recreated so that no stale build-id survives a rebuild. STAMP
# receives the build-id, for meson to track.
set -eu

objcopy=$1 readelf=$2 input=$3 stripped=$4 root=$5 stamp=$6

build_id=$("$readelf" -n "$input" | sed -n 's/^ *Build ID: *\([0-9a-f]*\)$/\1/p')
if [ -z "$build_id" ]; then
  echo "$input has no build-id (link it with -Wl,--build-id)" >&2
  exit 1
fi
rest=${build_id#??}
head=${build_id%"$rest"}

rm -rf "$root"
mkdir -p "$root/.build-id/$head"
"$objcopy" --only-keep-debug "$input" "$root/.build-id/$head/$rest.debug"
"$objcopy" --strip-all "$input" "$stripped"
echo "$build_id" > "$stamp"
