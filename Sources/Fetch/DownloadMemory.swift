import Admission

/// Bytes taken from the memory gate (`--memory-budget`) for a downloaded original, given back once, when the last copy of
/// the original that carries it (a job's, the original cache's) is gone.
public final class MemoryHold: Sendable {
  public let bytes: Int
  private let memory: AdmissionGate

  init(bytes: Int, memory: AdmissionGate) {
    self.bytes = bytes
    self.memory = memory
  }

  deinit { memory.give(bytes) }
}

/// What one transfer has taken so far; given back when the transfer ends without a body to keep, or
/// turned into the original's MemoryHold. Touched only by the thread running the transfer, and by the
/// fetching task once it has ended.
final class BodyReservation: @unchecked Sendable {
  let memory: AdmissionGate
  private(set) var bytes = 0

  init(memory: AdmissionGate) {
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
