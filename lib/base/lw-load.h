/* lw-load.h: a field read out of bytes copied from another thread's memory
 *
 * The interpreters' frames are copied byte for byte (lw-python-stack.c,
 * lw-gjs.c) and their fields found at offsets from a layout table: an
 * offset need not be aligned for the field's type. A memcpy() into a local
 * is the portable unaligned load (one instruction on x86-64), and it is
 * async-signal-safe.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Any thread, async-signal-safe. The pointer-sized value at @offset of
 * @base; the caller has checked that it lies within the copy. */
static inline uintptr_t
lw_load_uptr (const void *base, size_t offset)
{
  uintptr_t value;

  memcpy (&value, (const unsigned char *) base + offset, sizeof value);
  return value;
}

/* Any thread, async-signal-safe. The uint32_t at @offset of @base. */
static inline uint32_t
lw_load_u32 (const void *base, size_t offset)
{
  uint32_t value;

  memcpy (&value, (const unsigned char *) base + offset, sizeof value);
  return value;
}

/* Any thread, async-signal-safe. The uint64_t at @offset of @base. */
static inline uint64_t
lw_load_u64 (const void *base, size_t offset)
{
  uint64_t value;

  memcpy (&value, (const unsigned char *) base + offset, sizeof value);
  return value;
}
