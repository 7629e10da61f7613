/* unwind-victim: a library whose code and CFI test-unwind unmaps behind
 * the loader's back, as a dlclose() on another thread would during a walk. */

int unwind_victim_function (volatile int *counter);

__attribute__ ((noipa)) int
unwind_victim_function (volatile int *counter)
{
  for (int i = 0; i < 100; i++)
    (*counter)++;
  return *counter;
}
