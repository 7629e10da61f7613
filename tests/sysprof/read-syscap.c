/* read-syscap FILE: a Sysprof capture, read with Sysprof's own reader
 * (libsysprof-capture), printed one record a line for the tests:
 *
 *   process PID CMDLINE
 *   map PID START END FILENAME
 *   metadata PID ID          then the metadata's lines, each as "  LINE"
 *   mark PID TIME DURATION GROUP NAME MESSAGE
 *   sample PID TID TIME N_ADDRS ADDR...   (addresses innermost first, hex)
 *   jitmap PID ADDR NAME      one line per entry of a JITMAP record
 *
 * Times are CLOCK_MONOTONIC ns. Exit status 1 when the file cannot be read
 * to its end.
 */
#include <stdio.h>
#include <string.h>

#include <sysprof-capture.h>

int
main (int argc, char **argv)
{
  SysprofCaptureReader *reader;
  SysprofCaptureFrameType type;

  if (argc != 2)
    {
      fprintf (stderr, "usage: read-syscap FILE\n");
      return 2;
    }
  reader = sysprof_capture_reader_new (argv[1]);
  if (reader == NULL)
    {
      fprintf (stderr, "read-syscap: %s is not a Sysprof capture\n", argv[1]);
      return 1;
    }
  while (sysprof_capture_reader_peek_type (reader, &type))
    {
      switch (type)
        {
        case SYSPROF_CAPTURE_FRAME_PROCESS:
          {
            const SysprofCaptureProcess *process = sysprof_capture_reader_read_process (reader);

            if (process == NULL)
              return 1;
            printf ("process %d %s\n", process->frame.pid, process->cmdline);
            break;
          }
        case SYSPROF_CAPTURE_FRAME_MAP:
          {
            const SysprofCaptureMap *map = sysprof_capture_reader_read_map (reader);

            if (map == NULL)
              return 1;
            printf ("map %d %" PRIx64 " %" PRIx64 " %s\n", map->frame.pid, map->start, map->end, map->filename);
            break;
          }
        case SYSPROF_CAPTURE_FRAME_METADATA:
          {
            const SysprofCaptureMetadata *metadata = sysprof_capture_reader_read_metadata (reader);
            const char *line;

            if (metadata == NULL)
              return 1;
            printf ("metadata %d %.*s\n", metadata->frame.pid, (int) sizeof metadata->id, metadata->id);
            for (line = metadata->metadata; *line != '\0'; )
              {
                const char *end = strchr (line, '\n');
                int len = end != NULL ? (int) (end - line) : (int) strlen (line);

                printf ("  %.*s\n", len, line);
                line += len + (end != NULL);
              }
            break;
          }
        case SYSPROF_CAPTURE_FRAME_MARK:
          {
            const SysprofCaptureMark *mark = sysprof_capture_reader_read_mark (reader);

            if (mark == NULL)
              return 1;
            printf ("mark %d %" PRId64 " %" PRId64 " %.*s %.*s %s\n", mark->frame.pid, mark->frame.time,
                    mark->duration, (int) sizeof mark->group, mark->group, (int) sizeof mark->name, mark->name,
                    mark->message);
            break;
          }
        case SYSPROF_CAPTURE_FRAME_SAMPLE:
          {
            const SysprofCaptureSample *sample = sysprof_capture_reader_read_sample (reader);

            if (sample == NULL)
              return 1;
            printf ("sample %d %d %" PRId64 " %u", sample->frame.pid, sample->tid, sample->frame.time,
                    (unsigned) sample->n_addrs);
            for (unsigned i = 0; i < sample->n_addrs; i++)
              printf (" %" PRIx64, (uint64_t) sample->addrs[i]);
            printf ("\n");
            break;
          }
        case SYSPROF_CAPTURE_FRAME_JITMAP:
          {
            const SysprofCaptureJitmap *jitmap = sysprof_capture_reader_read_jitmap (reader);
            SysprofCaptureJitmapIter iter;
            SysprofCaptureAddress addr;
            const char *name;

            if (jitmap == NULL)
              return 1;
            sysprof_capture_jitmap_iter_init (&iter, jitmap);
            while (sysprof_capture_jitmap_iter_next (&iter, &addr, &name))
              printf ("jitmap %d %" PRIx64 " %s\n", jitmap->frame.pid, (uint64_t) addr, name);
            break;
          }
        default:
          if (!sysprof_capture_reader_skip (reader))
            return 1;
          break;
        }
    }
  sysprof_capture_reader_unref (reader);
  return 0;
}
