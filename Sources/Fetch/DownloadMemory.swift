import Admission
import ThumbCore

/// Bytes taken from the memory gate (`--memory-budget`) for a downloaded original, given back once, when the last copy of
/// the original that carries it (a job's, the original cache's) is gone.
public final class MemoryHold: Sendable {
  /// Every byte this hold stands for, its parts' included.
  public let bytes: Int
  /// What this hold took itself, given back by it.
  private let own: Int
  private let memory: AdmissionGate?
  /// Holds given back with this one (a video read by ranges: its head's and each part's).
  private let parts: [MemoryHold]

  init(bytes: Int, memory: AdmissionGate) {
    self.bytes = bytes
    self.own = bytes
    self.memory = memory
    self.parts = []
  }

  /// Several holds as one, for as long as it lives: each is given back when the last of its holders
  /// goes.
  init(joining holds: [MemoryHold]) {
    bytes = holds.reduce(0) { $0 + $1.bytes }
    own = 0
    memory = nil
    parts = holds
  }

  /// `hold` and `more` as one hold (nil when there are none).
  static func joining(_ hold: MemoryHold?, _ more: [MemoryHold]) -> MemoryHold? {
    let all = (hold.map { [$0] } ?? []) + more
    return all.count <= 1 ? all.first : MemoryHold(joining: all)
  }

  deinit { if own > 0, let memory { memory.give(own) } }

  /// `bytes` taken from `memory` for bytes about to be read (a spooled file's part), waiting while the
  /// budget has no room; nil without a budget. More than the whole budget: over_memory_budget.
  static func taking(_ bytes: Int, from memory: AdmissionGate?) async throws(JobError) -> MemoryHold? {
    guard let memory, bytes > 0 else { return nil }
    guard bytes <= memory.capacity else {
      throw JobError(
        .overMemoryBudget,
        "a part of \(ByteSize.format(bytes)) is more than the \(ByteSize.format(memory.capacity)) --memory-budget"
      )
    }
    while true {
      let taken = await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
        if memory.take(bytes, orWake: { done.resume(returning: false) }) { done.resume(returning: true) }
      }
      if taken { return MemoryHold(bytes: bytes, memory: memory) }
      if Task.isCancelled { throw JobError(.internalError, "cancelled while waiting for memory") }
    }
  }
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
