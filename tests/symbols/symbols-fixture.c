/* symbols-fixture.c: the library the symbolizer tests load
 *
 * Built three times (tests/symbols/meson.build): with its .symtab, stripped
 * to .dynsym, and stripped with its debug file under a test debug root.
 * The static function is named only where a .symtab is found.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <stdint.h>

int       lw_fixture_exported_function       (int n);
uintptr_t lw_fixture_static_function_address (void);

/* volatile keeps the loops, so each function is many bytes long. */
static volatile int lw_fixture_sink;

__attribute__((noipa)) static int
lw_fixture_static_function (int n)
{
  for (int i = 0; i < n; i++)
    lw_fixture_sink += i * n;
  return lw_fixture_sink;
}

__attribute__((noipa)) int
lw_fixture_exported_function (int n)
{
  for (int i = 0; i < n; i++)
    lw_fixture_sink -= i;
  return lw_fixture_static_function (n) + 1;
}

uintptr_t
lw_fixture_static_function_address (void)
{
  return (uintptr_t) lw_fixture_static_function;
}
