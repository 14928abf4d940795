#include "CPlatform.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

int thumbd_exec_with_tunable(const char *tunable, char *const argv[]) {
  const char *current = getenv("GLIBC_TUNABLES");
  // A tunable of that name already given, by an earlier exec or by the operator, is left as it is.
  char name[256];
  size_t name_length = strcspn(tunable, "=");
  if (name_length >= sizeof name) return -1;
  memcpy(name, tunable, name_length);
  name[name_length] = 0;
  if (current != NULL && strstr(current, name) != NULL) return 0;
  char value[4096];
  int written = current != NULL && *current != 0
                    ? snprintf(value, sizeof value, "%s:%s", current, tunable)
                    : snprintf(value, sizeof value, "%s", tunable);
  if (written < 0 || (size_t)written >= sizeof value) return -1;
  if (setenv("GLIBC_TUNABLES", value, 1) != 0) return -1;
  execv("/proc/self/exe", argv);
  // Still here: the exec failed; run on without the tunable.
  if (current != NULL) {
    setenv("GLIBC_TUNABLES", current, 1);
  } else {
    unsetenv("GLIBC_TUNABLES");
  }
  return -1;
}

int thumbd_cpu_supports_imaging(void) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return 1;
#endif
}
