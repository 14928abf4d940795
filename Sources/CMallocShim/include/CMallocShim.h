// glibc's mallopt, whose header (malloc.h) is not part of Swift's Glibc module.
#ifndef THUMBD_CMALLOCSHIM_H
#define THUMBD_CMALLOCSHIM_H

/// Sets a fixed mmap threshold (bytes; also turns glibc's dynamic threshold off) and the most malloc
/// arenas. Returns 1 when glibc accepted both.
int thumbd_malloc_tune(int mmap_threshold, int arena_max);

#endif
