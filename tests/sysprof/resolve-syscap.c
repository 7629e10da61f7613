/* resolve-syscap FILE: every sample of a Sysprof capture, named the way
 * Sysprof names it, for the tests:
 *
 *   reader READER
 *   sample TID TIME CONTEXT
 *     NAME                  one line per frame Sysprof shows, innermost first
 *
 * READER says how the names were found, whichever this build has:
 *   document   libsysprof-6 (Sysprof 45 and later): the document loader with
 *              its default symbolizers, as the Sysprof application loads a
 *              file; a sample's names are sysprof_document_list_symbols_in_traceable(),
 *              its stack as the call graph shows it; CONTEXT is "kernel" when
 *              the document lists the sample among those with a context switch
 *              (sysprof_document_list_samples_with_context_switch()), else "user";
 *   resolvers  libsysprof-4 (Sysprof 3.x): the call graph's own symbol
 *              resolvers (capture, kernel, ELF, JITMAP, in the order its call
 *              graph asks them), walked over each sample's addresses with the
 *              perf context marks as its call graph walks them: a mark names
 *              the context of the frames before it ("- - kernel - -"), an
 *              address no resolver names is left out;
 *   jitmap     libsysprof-capture only: the same walk, with the capture's
 *              JITMAP records as the only resolver (what Sysprof's JITMAP
 *              resolvers do: the exact address, user context), any other
 *              address printed in hex.
 * In the last two, CONTEXT is "kernel" when the walk went through the kernel
 * context.
 *
 * Exit status 1 when the file cannot be read.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#if defined (LW_RESOLVE_DOCUMENT) || defined (LW_RESOLVE_RESOLVERS)
# include <sysprof.h>
#else
# include <glib.h>
# include <sysprof-capture.h>
#endif

#ifdef LW_RESOLVE_DOCUMENT

static int
resolve (const char *path)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(SysprofDocumentLoader) loader = sysprof_document_loader_new (path);
  g_autoptr(SysprofDocument) document = NULL;
  g_autoptr(GListModel) samples = NULL;
  g_autoptr(GListModel) switched = NULL;
  g_autoptr(GHashTable) in_kernel = g_hash_table_new (NULL, NULL);

  document = sysprof_document_loader_load (loader, NULL, &error);
  if (document == NULL)
    {
      fprintf (stderr, "resolve-syscap: %s: %s\n", path, error->message);
      return 1;
    }
  printf ("reader document\n");
  switched = sysprof_document_list_samples_with_context_switch (document);
  for (guint i = 0; i < g_list_model_get_n_items (switched); i++)
    {
      g_autoptr(GObject) sample = g_list_model_get_item (switched, i);

      /* A sample by its time: one thread's samples never share one. */
      g_hash_table_add (in_kernel, GSIZE_TO_POINTER (sysprof_document_frame_get_time (SYSPROF_DOCUMENT_FRAME (sample))));
    }
  samples = sysprof_document_list_samples (document);
  for (guint i = 0; i < g_list_model_get_n_items (samples); i++)
    {
      g_autoptr(SysprofDocumentTraceable) sample = g_list_model_get_item (samples, i);
      g_autoptr(GListModel) symbols = sysprof_document_list_symbols_in_traceable (document, sample);
      gint64 time = sysprof_document_frame_get_time (SYSPROF_DOCUMENT_FRAME (sample));

      printf ("sample %d %" G_GINT64_FORMAT " %s\n", sysprof_document_traceable_get_thread_id (sample), time,
              g_hash_table_contains (in_kernel, GSIZE_TO_POINTER (time)) ? "kernel" : "user");
      for (guint s = 0; s < g_list_model_get_n_items (symbols); s++)
        {
          g_autoptr(SysprofSymbol) symbol = g_list_model_get_item (symbols, s);

          printf ("  %s\n", sysprof_symbol_get_name (symbol));
        }
    }
  return 0;
}

#else  /* the walk of Sysprof 3.x's call graph */

# ifdef LW_RESOLVE_RESOLVERS
#  define LW_READER_NAME "resolvers"
typedef GPtrArray LwResolvers;

/* The resolvers of Sysprof 3.x's call graph, in its order, loaded from
 * @reader. */
static LwResolvers *
resolvers_new (SysprofCaptureReader *reader)
{
  GPtrArray *resolvers = g_ptr_array_new_with_free_func (g_object_unref);

  g_ptr_array_add (resolvers, sysprof_capture_symbol_resolver_new ());
  g_ptr_array_add (resolvers, sysprof_kernel_symbol_resolver_new ());
  g_ptr_array_add (resolvers, sysprof_elf_symbol_resolver_new ());
  g_ptr_array_add (resolvers, sysprof_jitmap_symbol_resolver_new ());
  for (guint i = 0; i < resolvers->len; i++)
    {
      sysprof_capture_reader_reset (reader);
      sysprof_symbol_resolver_load (resolvers->pdata[i], reader);
    }
  sysprof_capture_reader_reset (reader);
  return resolvers;
}

/* The first name a resolver gives @address, or NULL. */
static char *
resolvers_name (LwResolvers *resolvers, const SysprofCaptureSample *sample, SysprofAddressContext context,
                SysprofCaptureAddress address)
{
  for (guint i = 0; i < resolvers->len; i++)
    {
      GQuark tag = 0;
      char *name = sysprof_symbol_resolver_resolve_with_context (resolvers->pdata[i], sample->frame.time,
                                                                 sample->frame.pid, context, address, &tag);

      if (name != NULL)
        return name;
    }
  return NULL;
}
# else
#  define LW_READER_NAME "jitmap"
typedef GHashTable LwResolvers;

/* The capture's JITMAP records: address -> name. */
static LwResolvers *
resolvers_new (SysprofCaptureReader *reader)
{
  GHashTable *jitmap = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, g_free);
  SysprofCaptureFrameType type;

  while (sysprof_capture_reader_peek_type (reader, &type))
    {
      const SysprofCaptureJitmap *record;
      SysprofCaptureJitmapIter iter;
      SysprofCaptureAddress address;
      const char *name;

      if (type != SYSPROF_CAPTURE_FRAME_JITMAP)
        {
          if (!sysprof_capture_reader_skip (reader))
            break;
          continue;
        }
      if ((record = sysprof_capture_reader_read_jitmap (reader)) == NULL)
        break;
      sysprof_capture_jitmap_iter_init (&iter, record);
      while (sysprof_capture_jitmap_iter_next (&iter, &address, &name))
        g_hash_table_insert (jitmap, g_memdup2 (&address, sizeof address), g_strdup (name));
    }
  sysprof_capture_reader_reset (reader);
  return jitmap;
}

/* @address's JITMAP name in user context, else the address in hex. */
static char *
resolvers_name (LwResolvers *jitmap, const SysprofCaptureSample *sample, SysprofAddressContext context,
                SysprofCaptureAddress address)
{
  const char *name = context == SYSPROF_ADDRESS_CONTEXT_USER ? g_hash_table_lookup (jitmap, &address) : NULL;

  return name != NULL ? g_strdup (name) : g_strdup_printf ("0x%" PRIx64, (uint64_t) address);
}
# endif

static int
resolve (const char *path)
{
  SysprofCaptureReader *reader = sysprof_capture_reader_new (path);
  SysprofCaptureFrameType type;
  LwResolvers *resolvers;
  GString *names = g_string_new (NULL);

  if (reader == NULL)
    {
      fprintf (stderr, "resolve-syscap: %s is not a Sysprof capture\n", path);
      return 1;
    }
  resolvers = resolvers_new (reader);
  printf ("reader %s\n", LW_READER_NAME);
  while (sysprof_capture_reader_peek_type (reader, &type))
    {
      const SysprofCaptureSample *sample;
      SysprofAddressContext context = SYSPROF_ADDRESS_CONTEXT_NONE;
      gboolean kernel = FALSE;

      if (type != SYSPROF_CAPTURE_FRAME_SAMPLE)
        {
          if (!sysprof_capture_reader_skip (reader))
            return 1;
          continue;
        }
      if ((sample = sysprof_capture_reader_read_sample (reader)) == NULL)
        return 1;
      g_string_truncate (names, 0);
      for (guint i = 0; i < sample->n_addrs; i++)
        {
          SysprofAddressContext next;
          g_autofree char *name = NULL;

          if (sysprof_address_is_context_switch (sample->addrs[i], &next))
            {
              /* The mark closes the frames of the context before it. */
              if (context != SYSPROF_ADDRESS_CONTEXT_NONE)
                g_string_append_printf (names, "  %s\n", sysprof_address_context_to_string (context));
              kernel |= context == SYSPROF_ADDRESS_CONTEXT_KERNEL;
              context = next;
              continue;
            }
          /* Plain stacks, without marks, are the program's. */
          if (context == SYSPROF_ADDRESS_CONTEXT_NONE)
            context = SYSPROF_ADDRESS_CONTEXT_USER;
          name = resolvers_name (resolvers, sample, context, sample->addrs[i]);
          if (name != NULL)
            g_string_append_printf (names, "  %s\n", name);
        }
      if (context != SYSPROF_ADDRESS_CONTEXT_NONE && context != SYSPROF_ADDRESS_CONTEXT_USER)
        {
          g_string_append_printf (names, "  %s\n", sysprof_address_context_to_string (context));
          kernel |= context == SYSPROF_ADDRESS_CONTEXT_KERNEL;
        }
      printf ("sample %d %" PRId64 " %s\n%s", sample->tid, sample->frame.time, kernel ? "kernel" : "user",
              names->str);
    }
# ifdef LW_RESOLVE_RESOLVERS
  g_ptr_array_unref (resolvers);
# else
  g_hash_table_unref (resolvers);
# endif
  g_string_free (names, TRUE);
  sysprof_capture_reader_unref (reader);
  return 0;
}

#endif

int
main (int argc, char **argv)
{
  if (argc != 2)
    {
      fprintf (stderr, "usage: resolve-syscap FILE\n");
      return 2;
    }
  return resolve (argv[1]);
}
