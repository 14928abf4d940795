import Synchronization

/// Limits how many jobs do their work at once. A worker can hold more jobs than its concurrency (the
/// lease takes the siblings of a URL along, docs/fetching.md); the extra ones wait here, in lease order,
/// under a lease the keeper keeps extending.
final class SlotGate: Sendable {
  private struct State {
    var free: Int
    var waiters: [(id: UInt64, continuation: CheckedContinuation<Bool, Never>)] = []
    var nextID: UInt64 = 0
  }

  private let state: Mutex<State>

  init(slots: Int) {
    state = Mutex(State(free: slots))
  }

  /// Waits for a slot. False when the task was cancelled while waiting (then no slot is held).
  func acquire() async -> Bool {
    // The common case, a free slot, takes no continuation: no suspension, no extra trip through the
    // executor for every job.
    let id = state.withLock { state -> UInt64? in
      if state.free > 0 && state.waiters.isEmpty {
        state.free -= 1
        return nil
      }
      state.nextID += 1
      return state.nextID
    }
    guard let id else { return true }
    return await withTaskCancellationHandler {
      await withCheckedContinuation { continuation in
        let granted: Bool? = state.withLock { state in
          // Checked under the lock: a cancellation that came before this line finds no waiter to resume.
          if Task.isCancelled { return false }
          if state.free > 0 {
            state.free -= 1
            return true
          }
          state.waiters.append((id, continuation))
          return nil
        }
        if let granted { continuation.resume(returning: granted) }
      }
    } onCancel: {
      let waiter = state.withLock { state in
        state.waiters.firstIndex { $0.id == id }.map { state.waiters.remove(at: $0) }
      }
      waiter?.continuation.resume(returning: false)
    }
  }

  /// Returns a slot: to the longest waiter, or to the pool.
  func release() {
    let next = state.withLock { state in
      if state.waiters.isEmpty {
        state.free += 1
        return nil as CheckedContinuation<Bool, Never>?
      }
      return state.waiters.removeFirst().continuation
    }
    next?.resume(returning: true)
  }
}
