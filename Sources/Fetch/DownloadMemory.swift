/// The memory a download's body is counted against while it grows: the worker's `--memory-budget`.
/// Downloads never wait in line for it: one that is refused pauses (curl stops reading the socket) until
/// `wake` is called, then asks again.
public protocol DownloadMemory: Sendable {
  /// Takes `bytes` if they fit now. Otherwise returns false and calls `wake` once, later, when memory may
  /// have been given back.
  func take(_ bytes: Int, orWake wake: @escaping @Sendable () -> Void) -> Bool
  func give(_ bytes: Int)
}

/// Bytes taken from a DownloadMemory for a downloaded original, given back once, when the last copy of
/// the original that carries it (a job's, the original cache's) is gone.
public final class MemoryHold: Sendable {
  public let bytes: Int
  private let memory: any DownloadMemory

  init(bytes: Int, memory: any DownloadMemory) {
    self.bytes = bytes
    self.memory = memory
  }

  deinit { memory.give(bytes) }
}

/// What one transfer has taken so far; given back when the transfer ends without a body to keep, or
/// turned into the original's MemoryHold. Touched only by the thread running the transfer, and by the
/// fetching task once it has ended.
final class BodyReservation: @unchecked Sendable {
  let memory: any DownloadMemory
  private(set) var bytes = 0

  init(memory: any DownloadMemory) {
    self.memory = memory
  }

  func take(_ extra: Int, orWake wake: @escaping @Sendable () -> Void) -> Bool {
    guard memory.take(extra, orWake: wake) else { return false }
    bytes += extra
    return true
  }

  /// Gives back everything taken (the transfer failed: its body will not be kept).
  func giveBack() {
    if bytes > 0 { memory.give(bytes) }
    bytes = 0
  }

  /// The reservation as a hold that lives as long as the original.
  func seal() -> MemoryHold {
    defer { bytes = 0 }
    return MemoryHold(bytes: bytes, memory: memory)
  }

  deinit { giveBack() }
}
