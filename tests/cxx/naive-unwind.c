/* naive-unwind: the negative control. A library that links libunwind the
 * naive way (DT_NEEDED), which puts libunwind's _Unwind_* in the global
 * scope. check-cxx.sh requires its binding check to see the hijack here,
 * so a passing check is known to be able to fail. */
#include <libunwind.h>

int naive_unwind_depth (void);

int
naive_unwind_depth (void)
{
  void *frames[8];

  return unw_backtrace (frames, 8);
}
