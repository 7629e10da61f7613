#!/bin/sh
# check-exports.sh LIBRARY HEADER
# Passes when the dynamic symbols LIBRARY defines are exactly the functions
# HEADER declares with LAGWATCH_API, and LIBRARY does not need libunwind
# (whose _Unwind_* exports would take over C++ exception unwinding).
set -eu
lib=$1
header=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

nm -D --defined-only "$lib" | awk '$2 ~ /^[TtWwDdBbRr]$/ { print $3 }' | sed 's/@.*//' | sort -u > "$tmp/exported"
grep -v "^ *#" "$header" | tr '\n' ' ' | grep -o 'LAGWATCH_API [^;(]*(' | sed 's/ *($//; s/.*[ *]//' | sort -u > "$tmp/declared"

status=0
if ! grep -q . "$tmp/declared"; then
  echo "no LAGWATCH_API declaration found in $header"; status=1
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
