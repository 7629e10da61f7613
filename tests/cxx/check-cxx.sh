#!/bin/sh
# check-cxx.sh HOST_LINKED HOST_PLAIN LIBLAGWATCH LIBNAIVE
# C++ exceptions must keep unwinding through libgcc_s with lagwatch linked
# or preloaded: run each host, check its exit status and, with
# LD_DEBUG=bindings, which library libstdc++'s _Unwind_RaiseException binds to.
set -u
linked=$1; plain=$2; liblagwatch=$3; libnaive=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0

# unwinder_of NAME CMD...: runs CMD with binding traces; prints every library
# that a binding of _Unwind_RaiseException went to (libstdc++'s own, and the
# next hop when a sanitizer runtime interposes it), then CMD's exit status.
unwinder_of() {
  name=$1; shift
  env LD_DEBUG=bindings LD_DEBUG_OUTPUT="$tmp/$name" LAGWATCH_OUTPUT=none "$@" > "$tmp/$name.out" 2>&1
  code=$?
  to=$(cat "$tmp/$name".* 2>/dev/null | grep " to .*_Unwind_RaiseException'" \
       | sed 's/.* to \([^ ]*\) .*/\1/' | sort -u | tr '\n' ',')
  echo "${to:-unbound,} $code"
}

expect_gcc() {
  name=$1; shift
  set -- $(unwinder_of "$name" "$@")
  case "$1" in
    *libunwind.so*|unbound,) echo "FAIL $name: _Unwind_RaiseException bound to $1"; status=1 ;;
    *libgcc_s.so.1*) ;;
    *) echo "FAIL $name: _Unwind_RaiseException never reached libgcc_s: $1"; status=1 ;;
  esac
  if [ "$2" != 0 ]; then
    echo "FAIL $name: exit status $2"; cat "$tmp/$name.out"; status=1
  else
    echo "ok $name: bound to $1 $(cat "$tmp/$name.out")"
  fi
}

# Under ASan the runtime must be loaded before any instrumented library.
asan=${LW_ASAN_RUNTIME:+$LW_ASAN_RUNTIME }

expect_gcc linked env LW_EXPECT_LAGWATCH=1 "$linked"
expect_gcc preloaded env LW_EXPECT_LAGWATCH=1 LD_PRELOAD="$asan$liblagwatch" "$plain"
expect_gcc without-lagwatch "$plain"

# The control: the naive link must be caught by the same check. Under ASan
# the runtime loads libgcc_s ahead of every library, so no naive link can
# hijack there: the control only means something in a plain build.
# Debian's libunwind 1.8.1-0.4 (unstable) no longer exports _Unwind_*:
# with such a libunwind no link can hijack, and the control has nothing to
# catch.
libunwind=$(ldd "$libnaive" | awk '/libunwind\.so\.8/ { print $3 }')
if [ -n "$asan" ]; then
  echo "skip control: the ASan runtime puts libgcc_s first in the scope"
elif ! nm -D --defined-only "$libunwind" | grep -q ' _Unwind_RaiseException'; then
  echo "skip control: $libunwind exports no _Unwind_RaiseException, so no link to it can take C++ exceptions over"
else
  set -- $(unwinder_of naive env LD_PRELOAD="$libnaive" "$plain")
  case "$1" in
    *libunwind.so.8*) echo "ok control: a naive libunwind link is detected (bound to $1)" ;;
    *) echo "FAIL control: a naive libunwind link was not detected (bound to $1): the check proves nothing"; status=1 ;;
  esac
fi
exit $status
