/* lw-altstack.h: the alternate signal stack of each watched loop thread */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Loop thread, normal context, once per thread that starts to run a
 * watched context (lw-hooks.c, when it adopts the thread). Gives the
 * thread an alternate signal stack of lagwatch's (mmap'd, with a guard
 * page), unless it has one of its own, which is then used as it is: the
 * handler is installed with SA_ONSTACK, so the kernel's signal frame
 * (about 3.4 KiB with AVX-512 state) never lands on a stack that is
 * nearly full. Side effects: the thread's sigaltstack() reports ours, and
 * the program's own SA_ONSTACK handlers run on it too (64 KiB); it is
 * unmapped when the thread exits. */
void lw_altstack_prepare (void);

G_END_DECLS
