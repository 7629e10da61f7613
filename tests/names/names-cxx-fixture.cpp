// names-cxx-fixture.cpp: a user's template method that calls std::sort,
// built -O2 -g: std::sort and most of its helpers are inlined into
// Sorter<int>::sort_many(), whose frame must still be named with its own
// file:line (the line marked LW_NAMES_SORT, looked up by test-names.c).
//
// SPDX-License-Identifier: LGPL-2.1-or-later
#include <algorithm>
#include <cstdint>
#include <execinfo.h>
#include <vector>

namespace
{
void *lw_names_stack[64];
int lw_names_depth;

// The comparator records the stack once: it is called from inside std::sort.
[[gnu::noinline]] bool
by_value (int a, int b)
{
  if (lw_names_depth == 0)
    lw_names_depth = backtrace (lw_names_stack, 64);
  return a < b;
}
}

template <typename T> struct Sorter
{
  std::vector<T> items;

  [[gnu::noinline]] void sort_many ();
};

template <typename T>
void
Sorter<T>::sort_many ()
{
  std::sort (items.begin (), items.end (), by_value); // LW_NAMES_SORT
}

// Sorts 1000 ints; returns the stack by_value recorded (backtrace()'s
// addresses, innermost first) and its depth.
extern "C" void **
lw_names_cxx_run (int *depth)
{
  Sorter<int> sorter;

  for (int i = 0; i < 1000; i++)
    sorter.items.push_back ((i * 7919) % 1000);
  lw_names_depth = 0;
  sorter.sort_many ();
  *depth = lw_names_depth;
  return lw_names_stack;
}
