// What Swift's Glibc module does not offer: glibc's mallopt (malloc.h) and the compiler's CPU feature
// test.
#ifndef THUMBD_CPLATFORM_H
#define THUMBD_CPLATFORM_H

/// Sets a fixed mmap threshold (bytes; also turns glibc's dynamic threshold off) and the most malloc
/// arenas. Returns 1 when glibc accepted both.
int thumbd_malloc_tune(int mmap_threshold, int arena_max);

/// Blocks below `mmap_threshold` bytes come from the heap, and the heap keeps up to `trim_threshold`
/// free bytes at its top instead of returning them to the kernel. Returns 1 when glibc accepted both.
int thumbd_malloc_keep_freed(int mmap_threshold, int trim_threshold);

/// 1 when the CPU has the instructions the Imaging module is compiled for (x86-64: AVX2 and FMA,
/// Haswell and later); always 1 on other architectures.
int thumbd_cpu_supports_imaging(void);

#endif
