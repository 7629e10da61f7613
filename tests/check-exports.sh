#!/bin/sh
# check-exports.sh LIBRARY HEADER...
# Passes when the dynamic symbols LIBRARY defines are exactly the functions
# the HEADERs declare with LAGWATCH_API (a LAGWATCH_API G_DECLARE_FINAL_TYPE
# declares its type's _get_type), and LIBRARY does not need libunwind
# (whose _Unwind_* exports would take over C++ exception unwinding).
set -eu
lib=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

nm -D --defined-only "$lib" | awk '$2 ~ /^[TtWwDdBbRr]$/ { print $3 }' | sed 's/@.*//' | sort -u > "$tmp/exported"
cat "$@" | grep -v "^ *#" | tr '\n' ' ' > "$tmp/headers"
{
  grep -o 'LAGWATCH_API [^;(]*(' "$tmp/headers" | grep -v 'G_DECLARE_FINAL_TYPE' | sed 's/ *($//; s/.*[ *]//'
  grep -o 'LAGWATCH_API *G_DECLARE_FINAL_TYPE *([^,]*, *[a-z_]*' "$tmp/headers" | sed 's/.*, *//; s/$/_get_type/'
} | sort -u > "$tmp/declared"

status=0
if ! grep -q . "$tmp/declared"; then
  echo "no LAGWATCH_API declaration found in $*"; status=1
fi
if ! diff -u "$tmp/declared" "$tmp/exported" > "$tmp/diff"; then
  echo "exported symbols differ from the public header (- declared only, + exported only):"
  cat "$tmp/diff"; status=1
fi
if readelf -d "$lib" | grep NEEDED | grep -q libunwind; then
  echo "$lib needs libunwind directly:"; readelf -d "$lib" | grep NEEDED; status=1
fi
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
case "$soname" in
  liblagwatch.so.[0-9]*) ;;
  *) echo "unexpected soname: '$soname'"; status=1 ;;
esac
[ $status -eq 0 ] && echo "ok: $(wc -l < "$tmp/exported") symbols exported, all lagwatch_*, soname $soname"
exit $status
