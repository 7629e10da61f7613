#!/bin/sh
# check-core-symbols.sh ARCHIVE
# Passes when every function the objects of ARCHIVE (lagwatch-core: the
# signal handler and what it reaches) call from outside is on the list of
# async-signal-safe functions below (signal-safety(7)), or is inserted by
# a sanitizer. A call to malloc, stdio, GLib or a lock in the handler's
# path fails the build's tests here, not in a program.
set -eu
archive=$1

# What the core really uses, each async-signal-safe: errno's location,
# clock_gettime, getpid, gettid, sem_post, sigaction, syscall (tgkill,
# process_vm_readv, pread64 of /proc/self/mem).
allowed='__errno_location clock_gettime getpid gettid sem_post sigaction syscall'

status=0
for symbol in $(nm -u "$archive" | awk 'NF == 2 && $1 == "U" { print $2 }' | sed 's/@.*//' | sort -u); do
  case "$symbol" in
    __asan_*|__ubsan_*|__sanitizer_*|__tsan_*) continue ;;  # sanitizer instrumentation
    _GLOBAL_OFFSET_TABLE_) continue ;;  # defined by the linker, not a call
  esac
  case " $allowed " in
    *" $symbol "*) ;;
    *) echo "$archive calls $symbol, which is not on the async-signal-safe list"; status=1 ;;
  esac
done
exit $status
