/* lw-unwind-fp.c: the unwinder's steps without CFI
 *
 * A frame in no module at all (code a runtime generated: JIT code) has no
 * CFI anywhere: it is stepped by its frame pointer or a scan of the stack
 * copy (lw_unwind_step_generated()). A frame whose CFA is rbp-based, met
 * with rbp unknown (a thread caught sleeping), gets its frame pointer
 * back by trying the words above its stack pointer against its own row
 * (lw_unwind_recover_fp()). Both read only the stack copy and modules'
 * code, through the kernel, and check every word they take.
 */
#include "lw-unwind-private.h"

#include <string.h>

#include "lw-modules.h"

/* How many records of a frame-pointer chain through generated code whose
 * word above the saved rbp is no return address (lw_unwind_step_generated)
 * are passed over before the walk falls back to a scan. */
#define LW_UNWIND_SKIPPED_LINKS 4

/* How far up from a generated frame's stack pointer a return address into
 * a module is looked for: SpiderMonkey's frames are small, its stack of
 * generated frames between two native ones rarely deeper. */
#define LW_UNWIND_SCAN_BYTES (64 * 1024)

/* Watcher thread. TRUE when the instruction that ends just before @ret,
 * an address in a module's or generated code, is a call: e8 rel32, or ff /2 (call
 * through a register or memory operand: 2, 3, 4, 6 or 7 bytes). Read
 * through the kernel: never a fault. */
static gboolean
lw_unwind_follows_call (uintptr_t ret)
{
  guint8 code[7];

  if (ret < sizeof code || !lw_modules_read_memory (ret - sizeof code, code, sizeof code))
    return FALSE;
  if (code[2] == 0xe8)
    return TRUE;
  for (guint len = 2; len <= 7; len++)
    {
      guint8 modrm = code[sizeof code - len + 1];

      if (len != 5 && code[sizeof code - len] == 0xff && ((modrm >> 3) & 7) == 2)
        return TRUE;
    }
  return FALSE;
}

/* Watcher thread. Where the call instruction that ends just before @ret
 * goes, when its code says: a direct call's target (e8 rel32) in a
 * module, followed through a PLT stub's jump (endbr64 and a bnd prefix
 * allowed, then ff 25 rel32) to the address its GOT slot holds, or a call
 * through a GOT slot (ff 15 rel32). 0 when the code does not say: a call
 * through a register or any other operand, a slot the loader has not
 * bound yet or bound within the caller's own module (a lazy slot points
 * back into the module's PLT). Read through the kernel: never a fault. */
static uintptr_t
lw_unwind_call_target (uintptr_t ret)
{
  guint8 code[6], stub[11];
  uintptr_t target, slot, dest, lo, hi;
  int32_t rel;
  guint at = 0;

  if (ret < sizeof code || !lw_modules_read_memory (ret - sizeof code, code, sizeof code))
    return 0;
  memcpy (&rel, code + 2, sizeof rel);
  if (code[0] == 0xff && code[1] == 0x15)
    {
      slot = ret + (intptr_t) rel;
      return lw_modules_read_memory (slot, &dest, sizeof dest) ? dest : 0;
    }
  if (code[1] != 0xe8)
    return 0;
  target = ret + (intptr_t) rel;
  if (!lw_modules_readable_range (target, &lo, &hi) || !lw_modules_read_memory (target, stub, sizeof stub))
    return 0;
  if (memcmp (stub, "\xf3\x0f\x1e\xfa", 4) == 0)
    at = 4;
  if (stub[at] == 0xf2)
    at++;
  if (stub[at] != 0xff || stub[at + 1] != 0x25)
    return target;
  memcpy (&rel, stub + at + 2, sizeof rel);
  slot = target + at + 6 + (intptr_t) rel;
  if (!lw_modules_read_memory (slot, &dest, sizeof dest) || (dest >= lo && dest < hi))
    return 0;
  return dest;
}

/* Watcher thread. Steps a frame of code that lies in no loaded module: code
 * a runtime generated into an anonymous executable mapping (a JIT, such as
 * SpiderMonkey's in GJS), which has no CFI anywhere. Two ways, both reading
 * only the stack copy (never live memory), each word checked:
 * - by frame pointer, when rbp points into the copy at or above the stack
 *   pointer: [rbp] is the caller's rbp, [rbp + 8] the return address (the
 *   entry trampolines and baseline frames push rbp; the caller's stack
 *   pointer, rbp + 16, is strictly higher, so the walk progresses). The
 *   return address must follow a call instruction and, outside every
 *   module, lie in an anonymous executable mapping. SpiderMonkey links
 *   records into the chain with a data pointer at [rbp + 8] (a heap
 *   address, seen under AddressSanitizer's allocator as a frame of its
 *   own): such a record is no frame, and the walk follows its saved rbp
 *   to the next record (at most LW_UNWIND_SKIPPED_LINKS of them). A saved
 *   rbp below is kept only as the caller's register value when the caller
 *   is a module's code (CFI takes over there); into more generated code it
 *   is dropped (SpiderMonkey 102's optimized code uses rbp as an ordinary
 *   register);
 * - else by scanning the copy upward from the stack pointer for the first
 *   word that is a return address into a module's code (the instruction
 *   before it is a call): the native code that entered the generated code.
 *   The trampoline that entered it pushed the caller's rbp just below the
 *   return address, which is taken as the caller's rbp.
 * The generated code's other callee-saved registers are not known: they
 * are dropped, not guessed. */
LwStep
lw_unwind_step_generated (LwUnwinder *unwinder, const LwSnapshot *snap, LwRegState *state)
{
  const uint32_t rsp_bit = 1u << LW_REG_RSP, rbp_bit = 1u << LW_REG_RBP;
  uint64_t sp = state->regs[LW_REG_RSP], fp = state->regs[LW_REG_RBP];
  uint64_t end = snap->stack_base + snap->stack_len;
  uint64_t saved_fp, ret;

  if (!(state->valid & rsp_bit) || sp < snap->stack_base || sp > end)
    return LW_STEP_FAIL;
  for (guint link = 0; link <= LW_UNWIND_SKIPPED_LINKS && (state->valid & rbp_bit) && (fp & 7) == 0
                      && fp >= sp && fp < end && end - fp >= 16;
       link++)
    {
      memcpy (&saved_fp, snap->stack + (fp - snap->stack_base), sizeof saved_fp);
      memcpy (&ret, snap->stack + (fp - snap->stack_base) + 8, sizeof ret);
      /* No thread's stack begins in generated code: a 0 where the return
       * address would be says that rbp is no frame pointer here (optimized
       * code keeps other values in it), not that the stack ends. */
      if (ret == 0)
        break;
      if ((lw_modules_is_readable (ret - 1, 1) || lw_unwinder_in_generated_code (unwinder, ret - 1))
          && lw_unwind_follows_call (ret))
        {
          state->regs[LW_REG_RIP] = ret;
          state->regs[LW_REG_RSP] = fp + 16;
          state->regs[LW_REG_RBP] = saved_fp;
          state->valid = (1u << LW_REG_RIP) | rsp_bit;
          if (lw_modules_is_readable (ret - 1, 1) || (saved_fp > fp && saved_fp < end))
            state->valid |= rbp_bit;
          return LW_STEP_OK;
        }
      /* No return address: a record the runtime links into the chain
       * with a data word beside it. The chain goes on, upward only. */
      if (saved_fp <= fp)
        break;
      fp = saved_fp;
    }
  for (uint64_t at = (sp + 7) & ~(uint64_t) 7; at < end && end - at >= 8 && at - sp <= LW_UNWIND_SCAN_BYTES;
       at += 8)
    {
      memcpy (&ret, snap->stack + (at - snap->stack_base), sizeof ret);
      if (!lw_modules_is_readable (ret - 1, 1) || !lw_unwind_follows_call (ret))
        continue;
      state->regs[LW_REG_RIP] = ret;
      state->regs[LW_REG_RSP] = at + 8;
      state->valid = (1u << LW_REG_RIP) | rsp_bit;
      if (at - 8 >= snap->stack_base)
        {
          memcpy (&state->regs[LW_REG_RBP], snap->stack + (at - 8 - snap->stack_base), 8);
          state->valid |= rbp_bit;
        }
      return LW_STEP_OK;
    }
  return LW_STEP_FAIL;
}

/* How far above the stack pointer a frame-pointer frame's saved rbp is
 * looked for (lw_unwind_recover_fp): the frame's locals lie between the
 * two, rarely more than a few KiB even at -O0. */
#define LW_UNWIND_FP_SCAN_BYTES (16 * 1024)

/* Watcher thread. TRUE when @state, a caller's frame just stepped to, looks
 * like a real one: its pc follows a call in a module's code, and its own
 * step with its CFI row works (or ends the stack) to a pc that does too, or
 * to 0. Two links of a chain: a stale return address left in a dead part of
 * the stack rarely gives both. */
static gboolean
lw_unwind_caller_holds (LwUnwinder *unwinder, LwWalk *walk, const LwRegState *state)
{
  uintptr_t ret = (uintptr_t) state->regs[LW_REG_RIP];
  const LwCachedRow *entry;
  LwRegState next = *state;
  LwStep step;

  if (ret == 0)
    return TRUE;
  if (!lw_modules_is_readable (ret - 1, 1) || !lw_unwind_follows_call (ret))
    return FALSE;
  entry = lw_unwinder_row (unwinder, ret - 1);
  if (entry->status != LW_CFI_FOUND)
    return FALSE;
  step = lw_unwind_apply_row (&entry->row, walk, &next);
  if (step == LW_STEP_END)
    return TRUE;
  if (step != LW_STEP_OK)
    return FALSE;
  ret = (uintptr_t) next.regs[LW_REG_RIP];
  return ret == 0 || (lw_modules_is_readable (ret - 1, 1) && lw_unwind_follows_call (ret));
}

/* Watcher thread. Recovers the frame pointer of a frame whose CFA is
 * rbp-based (code built with frame pointers, or at -O0) when the walk
 * does not know rbp: a thread caught sleeping gives only its stack pointer
 * and pc (/proc/TID/syscall), and the system call wrapper below such a
 * frame never saves rbp, so nothing on the way up restored it.
 *
 * The frame's rbp is the address of the slot where its prologue pushed the
 * caller's rbp, somewhere above the stack pointer, with the return address
 * just above it. So each aligned word of the copy from the stack pointer up
 * is tried as rbp: the frame's own row applied with it must give a caller
 * that holds (lw_unwind_caller_holds: two links of the chain checked
 * against the modules' code and CFI), and whose call, where its code says
 * where it goes (lw_unwind_call_target), went to this frame's function.
 * Return addresses an earlier call left in what is now this frame's space
 * are a real chain of the past, which two links alone may take for the
 * present one: on Debian unstable, GLib's g_get_monotonic_time() is a
 * wrapper that calls g_get_monotonic_time_ns(); called by a GSource
 * callback just before the function that now sleeps, it left the return
 * address of that call, with the one into the callback above it, where
 * the sleeping function's frame lies. The first candidate that passes is
 * taken; when
 * none does, rbp stays unknown and the walk ends there, truncated, as
 * before. Reads only the stack copy and modules' code, through the kernel. */
gboolean
lw_unwind_recover_fp (LwUnwinder *unwinder, LwWalk *walk, const LwCfiRow *row, LwRegState *state)
{
  const LwSnapshot *snap = walk->snapshot;
  uint64_t sp = state->regs[LW_REG_RSP];
  uint64_t end = snap->stack_base + snap->stack_len;

  if (row->cfa_reg != LW_REG_RBP || (state->valid & (1u << LW_REG_RBP)) || !(state->valid & (1u << LW_REG_RSP))
      || sp < snap->stack_base || sp >= end)
    return FALSE;
  for (uint64_t fp = (sp + 7) & ~(uint64_t) 7; fp < end && fp - sp <= LW_UNWIND_FP_SCAN_BYTES; fp += 8)
    {
      LwRegState trial = *state;
      uint64_t ret_slot = fp + (int64_t) row->cfa_offset + (int64_t) row->saved[LW_REG_RIP];
      uint64_t ret;

      /* Cheap test first: the word where the return address would be is
       * in a module's code. */
      if (row->saved[LW_REG_RIP] == LW_CFI_SAME || row->saved[LW_REG_RIP] == LW_CFI_UNDEFINED
          || ret_slot < snap->stack_base || ret_slot + 8 > end)
        return FALSE;
      memcpy (&ret, snap->stack + (ret_slot - snap->stack_base), sizeof ret);
      if (ret == 0 || !lw_modules_is_readable (ret - 1, 1))
        continue;
      trial.regs[LW_REG_RBP] = fp;
      trial.valid |= 1u << LW_REG_RBP;
      {
        LwRegState caller = trial;
        uintptr_t reaches;

        if (lw_unwind_apply_row (row, walk, &caller) == LW_STEP_OK
            && caller.regs[LW_REG_RSP] > sp
            && lw_unwind_caller_holds (unwinder, walk, &caller)
            /* Last, as the dearest: up to three reads. */
            && ((reaches = lw_unwind_call_target (ret)) == 0 || reaches == row->pc_begin))
          {
            *state = trial;
            return TRUE;
          }
      }
    }
  return FALSE;
}
