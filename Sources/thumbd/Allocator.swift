import ArgumentParser
import CPlatform
import Imaging

/// glibc malloc settings for a process that allocates and frees buffers of tens of megabytes (decoded
/// photos, coefficient buffers) on many threads.
///
/// By default glibc raises its mmap threshold each time a large mmapped block is freed (up to 32 MiB),
/// so later buffers of that size come from the heap arenas instead, and each thread's arena keeps what
/// was freed in it. Measured with bench/memory (28 corpus JPEGs x 2, concurrency 2, budget 192 MiB):
/// peak RSS 503 MiB with the defaults, 208 MiB with these settings; without a budget, 614 against 345 MiB.
enum Allocator {
  static func tuneForLargeBuffers() {
    // A fixed threshold (which also turns the dynamic one off): every block of 1 MiB or more is its own
    // mapping, returned to the kernel the moment it is freed. Two arenas instead of eight per core:
    // fewer heaps holding freed small blocks; small allocations are not the bottleneck here, decoding is.
    _ = thumbd_malloc_tune(1 << 20, 2)
  }

  /// For a process that renders one photo at a time and then exits (`thumbd thumbnail`): freed buffers
  /// stay in the heap for the next photo instead of going back to the kernel, so the next photo's
  /// buffers are not page-faulted in again. Measured on the phone corpus's 12 JPEGs (bench/images
  /// --phone's files, one core): 91,000 minor faults and 0.23-0.27 s of system time in 1.08 s with the
  /// defaults, 14,000 faults and 0.06-0.09 s in 0.96-0.98 s with these; peak RSS 91 against 95 MiB. Not
  /// for the worker: its threads' arenas would each keep their own peak, past the memory budget.
  static func keepFreedMemoryForReuse() {
    // glibc before 2.35 refuses an mmap threshold over 32 MiB (and would keep the trim threshold,
    // leaving its dynamic threshold off at 128 KiB): then 32 MiB, which still holds a 12 MP photo's planes.
    if thumbd_malloc_keep_freed(256 << 20, 1 << 30) != 1 {
      _ = thumbd_malloc_keep_freed(32 << 20, 1 << 30)
    }
  }
}

/// The Imaging module is compiled for AVX2 and FMA on x86-64 (Package.swift); on an older CPU its first
/// vector instruction would kill the process with SIGILL. Commands that decode images check first.
enum CPUCheck {
  static func requireImagingSupport() throws {
    guard thumbd_cpu_supports_imaging() == 1 else {
      throw ValidationError(
        "this CPU lacks AVX2/FMA, which thumbd's image code is compiled for (x86-64 from Haswell, 2013, on)")
    }
  }
}

/// What a command that decodes and encodes images does first, before it starts any thread: checks the
/// CPU, and turns on optimised Huffman tables, which TurboJPEG reads from the environment on every
/// compression (JPEGEncoding), so the environment must not change once other threads may read it.
enum ImagingProcess {
  static func prepare() throws {
    try CPUCheck.requireImagingSupport()
    JPEGEncoding.optimizeHuffmanTablesForThisProcess()
  }
}
