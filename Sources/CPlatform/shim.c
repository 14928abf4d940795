#include "CPlatform.h"

#include <malloc.h>

int thumbd_malloc_tune(int mmap_threshold, int arena_max) {
  int threshold_set = mallopt(M_MMAP_THRESHOLD, mmap_threshold);
  int arenas_set = mallopt(M_ARENA_MAX, arena_max);
  return threshold_set == 1 && arenas_set == 1;
}

int thumbd_malloc_keep_freed(int mmap_threshold, int trim_threshold) {
  int threshold_set = mallopt(M_MMAP_THRESHOLD, mmap_threshold);
  int trim_set = mallopt(M_TRIM_THRESHOLD, trim_threshold);
  return threshold_set == 1 && trim_set == 1;
}

int thumbd_cpu_supports_imaging(void) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return 1;
#endif
}
