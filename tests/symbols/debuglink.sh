#!/bin/sh
# debuglink.sh OBJCOPY INPUT STRIPPED [corrupt]
#
# Stores INPUT's debug part in .debug/ next to STRIPPED, as NAME.debug, and
# strips INPUT into STRIPPED with a .gnu_debuglink naming it (the link
# holds the debug file's CRC-32). With "corrupt", one byte is appended to
# the debug file afterwards: still a valid ELF file, but not the one the
# link's CRC describes.
set -eu

objcopy=$1 input=$2 stripped=$3 corrupt=${4:-}

debug_dir=$(dirname "$stripped")/.debug
debug_file=$debug_dir/$(basename "$stripped").debug

mkdir -p "$debug_dir"
"$objcopy" --only-keep-debug "$input" "$debug_file"
"$objcopy" --strip-all --add-gnu-debuglink="$debug_file" "$input" "$stripped"
if [ "$corrupt" = corrupt ]; then
  printf 'x' >> "$debug_file"
fi
