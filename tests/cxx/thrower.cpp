// thrower: a C++ library that throws through several frames and catches
// its own exception, as the C++ dependency of a C/GTK program would.
#include <stdexcept>
#include <string>

namespace
{
[[gnu::noinline]] int
descend (int depth, int value)
{
  if (depth == 0)
    throw std::runtime_error (std::to_string (value));
  int below = descend (depth - 1, value);
  __asm__ volatile ("" ::: "memory");  // a real call per level, not a loop
  return below + 1;
}
}

extern "C" int
thrower_catch_through (int depth, int value)
{
  try
    {
      descend (depth, value);
    }
  catch (const std::runtime_error &error)
    {
      return std::stoi (error.what ());
    }
  return -1;
}
