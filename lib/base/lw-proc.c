/* lw-proc.c: where the process reads its own /proc files */
#include <glib.h>

#include "lw-proc.h"

const char *
lw_proc_self (void)
{
  static gsize thread_self;  /* 1: /proc/thread-self, 2: /proc/self */

  if (g_once_init_enter (&thread_self))
    g_once_init_leave (&thread_self, g_file_test ("/proc/thread-self", G_FILE_TEST_IS_DIR) ? 1 : 2);
  return thread_self == 1 ? "/proc/thread-self" : "/proc/self";
}
