#include "CMallocShim.h"

#include <malloc.h>

int thumbd_malloc_tune(int mmap_threshold, int arena_max) {
  int threshold_set = mallopt(M_MMAP_THRESHOLD, mmap_threshold);
  int arenas_set = mallopt(M_ARENA_MAX, arena_max);
  return threshold_set == 1 && arenas_set == 1;
}
