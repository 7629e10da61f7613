/* symbols-fixture.c: the library the symbolizer tests load
 *
 * Built in several variants (tests/symbols/meson.build): with its .symtab,
 * stripped to .dynsym, stripped with its debug file under a test debug
 * root, and, without a build-id, stripped with a .gnu_debuglink to a debug
 * file in .debug/ (one with the right CRC, one with a wrong one). The
 * static function is named only where a .symtab is found. Always built
 * with -g, for the line-info tests.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <stdint.h>

int       lw_fixture_exported_function       (int n);
uintptr_t lw_fixture_static_function_address (void);
uintptr_t lw_fixture_versioned_address       (void);

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

/* Exported under two versions of one name (symbols-fixture.map), as glibc
 * does: the .symtab (and so the debug file) names it
 * "lw_fixture_versioned@@LWFIX_1" and "lw_fixture_versioned@LWFIX_0". Its
 * own name is hidden, hence LOCAL, and reserved: the versioned name wins,
 * and must be shown without its suffix. */
__attribute__((noipa, visibility ("hidden"))) int _lw_fixture_versioned_impl (int n);

__attribute__((noipa, visibility ("hidden"))) int
_lw_fixture_versioned_impl (int n)
{
  for (int i = 0; i < n; i++)
    lw_fixture_sink ^= i;
  return lw_fixture_sink;
}
__asm__ (".symver _lw_fixture_versioned_impl, lw_fixture_versioned@@LWFIX_1");
__asm__ (".symver _lw_fixture_versioned_impl, lw_fixture_versioned@LWFIX_0");

uintptr_t
lw_fixture_versioned_address (void)
{
  return (uintptr_t) _lw_fixture_versioned_impl;
}
