/* take-descriptors.h: a process out of descriptors (EMFILE), and one
 * that takes over every descriptor it does not know, for the tests of what
 * lagwatch does then. */
#pragma once

#include <errno.h>
#include <glib.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

/* Test thread. Sets the limit a few descriptors above the highest open
 * one, then takes every free descriptor below it: no open(), socket() or
 * pipe() can succeed. lagwatch's threads run meanwhile and open and close
 * their own files: dup() takes only free numbers, where a dup2() onto one
 * found free could replace a file a thread had opened since (or fail with
 * EBUSY, racing that open: seen under load). A file a thread held open
 * meanwhile is closed after this returns, freeing its number: call again
 * to take it. The descriptors taken are added to @taken, unless NULL. */
static G_GNUC_UNUSED void
take_every_descriptor (GArray *taken)
{
  g_autoptr(GDir) dir = g_dir_open ("/proc/self/fd", 0, NULL);
  const char *name;
  struct rlimit limit;
  int highest = 2;
  int fd;

  g_assert_nonnull (dir);
  while ((name = g_dir_read_name (dir)) != NULL)
    highest = MAX (highest, atoi (name));
  g_clear_pointer (&dir, g_dir_close);
  g_assert_cmpint (getrlimit (RLIMIT_NOFILE, &limit), ==, 0);
  limit.rlim_cur = (rlim_t) highest + 1 + 8;
  g_assert_cmpint (setrlimit (RLIMIT_NOFILE, &limit), ==, 0);
  while ((fd = dup (2)) >= 0)
    if (taken != NULL)
      g_array_append_val (taken, fd);
  g_assert_cmpint (errno, ==, EMFILE);
}

/* Any thread. What descriptor @fd is (the readlink of /proc/self/fd/FD:
 * a path, "pipe:[N]", "anon_inode:[pidfd]"...), or NULL. */
static G_GNUC_UNUSED char *
descriptor_target (int fd)
{
  g_autofree char *link = g_strdup_printf ("/proc/self/fd/%d", fd);

  return g_file_read_link (link, NULL);
}

static int
take_compare_ints (const int *a, const int *b)
{
  return (*a > *b) - (*a < *b);
}

/* Test thread. The descriptors from 3 up, in order, that a program which
 * closes every descriptor it does not know (close_range (3, ~0U, 0), as
 * daemons do) takes: all but the eventfds of GLib's main contexts (a
 * program that closes those breaks GLib itself: GLib would write its
 * wake-ups into whatever file takes the number) and @keep (-1: none). */
static G_GNUC_UNUSED GArray *
unknown_descriptors (int keep)
{
  g_autoptr(GDir) dir = g_dir_open ("/proc/self/fd", 0, NULL);
  GArray *unknown = g_array_new (FALSE, FALSE, sizeof (int));
  const char *name;

  g_assert_nonnull (dir);
  /* The listing's own descriptor is among them: free once it returns. */
  while ((name = g_dir_read_name (dir)) != NULL)
    {
      int fd = atoi (name);
      g_autofree char *target = descriptor_target (fd);

      if (fd >= 3 && fd != keep && g_strcmp0 (target, "anon_inode:[eventfd]") != 0)
        g_array_append_val (unknown, fd);
    }
  g_array_sort (unknown, (GCompareFunc) take_compare_ints);
  return unknown;
}
