#if canImport(Glibc)
  import Glibc
#endif

/// Names the calling thread as top, gdb and crash reports show it, by writing its kernel name
/// (`/proc/thread-self/comm`, which is what glibc's pthread_setname_np does for another thread).
/// Foundation's `Thread.name` applies a name only once the creating thread has recorded the new
/// thread's handle, so a thread that starts running before that kept its creator's name. Linux keeps
/// 15 bytes; a longer name is cut there.
public func nameCurrentThread(_ name: String) {
  let bytes = Array(name.utf8.prefix(15))
  let file = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
  guard file >= 0 else { return }
  defer { close(file) }
  _ = bytes.withUnsafeBytes { write(file, $0.baseAddress, $0.count) }
}
