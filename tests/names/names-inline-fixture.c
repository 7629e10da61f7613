/* names-inline-fixture.c: a method inlined into its GSourceFunc wrapper,
 * as valac's C is at -O2 (built -O2 -g): only the DWARF knows that
 * demo_window_frobnicate() runs inside _demo_window_frobnicate_gsource_func().
 * The lines marked LW_NAMES_* are looked up by test-names.c.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <stdint.h>

uintptr_t lw_names_inline_run (void);

static uintptr_t lw_names_return_address;

/* Records where it returns to: inside the inlined method's code. */
__attribute__ ((noinline, noipa)) static void
lw_names_capture (void)
{
  lw_names_return_address = (uintptr_t) __builtin_return_address (0);
}

static inline __attribute__ ((always_inline)) int
demo_window_frobnicate (int n)
{
  int total = n * 3;

  lw_names_capture (); /* LW_NAMES_CAPTURE */
  return total + 1;
}

/* As valac writes it: the GSourceFunc that calls the method. */
__attribute__ ((noinline)) static int
_demo_window_frobnicate_gsource_func (void *self)
{
  return demo_window_frobnicate ((int) (intptr_t) self) > 0; /* LW_NAMES_CALL */
}

/* The return address inside the inlined method. */
uintptr_t
lw_names_inline_run (void)
{
  int (*volatile func) (void *) = _demo_window_frobnicate_gsource_func;

  func ((void *) 2);
  return lw_names_return_address;
}
