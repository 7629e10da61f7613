// symbols-cxx-fixture.cpp: a C++ library for the demangling test
//
// Loading it loads libstdc++, whose __cxa_demangle names its function
// "lwfix::deep::work(int)" (mangled _ZN5lwfix4deep4workEi).
//
// SPDX-License-Identifier: LGPL-2.1-or-later
#include <cstdint>
#include <string>

namespace lwfix
{
namespace deep
{
// std::to_string keeps libstdc++ a real dependency of the library.
[[gnu::noipa]] int
work (int n)
{
  std::string text;

  for (int i = 0; i < n; i++)
    text += std::to_string (i);
  return static_cast<int> (text.size ());
}
}
}

extern "C" uintptr_t
lw_cxx_fixture_work_address (void)
{
  return reinterpret_cast<uintptr_t> (&lwfix::deep::work);
}
