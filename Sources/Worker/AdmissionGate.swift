import Synchronization
import ThumbCore

/// Waits until a weighted share of a capacity is free, first come first served (ByteAdmission's rules).
/// The worker has two: job slots (capacity `--concurrency`, weight 1 per job; a worker can hold more
/// jobs than that, since a lease takes a URL's other jobs along) and memory (capacity `--memory-budget`
/// less the original cache, weight a job's predicted peak bytes).
final class AdmissionGate: Sendable {
  private struct State {
    var admission: ByteAdmission
    var waiters: [UInt64: CheckedContinuation<Outcome, Never>] = [:]
    var nextID: UInt64 = 0
  }

  enum Outcome: Equatable {
    case granted
    /// The task was cancelled while waiting: nothing is held.
    case cancelled
    /// The weight is more than the whole capacity.
    case neverFits
  }

  private let state: Mutex<State>
  let capacity: Int

  init(capacity: Int) {
    self.capacity = capacity
    state = Mutex(State(admission: ByteAdmission(capacity: capacity)))
  }

  func acquire(_ weight: Int) async -> Outcome {
    // The common case, room now and nobody waiting, takes no continuation: no suspension per job.
    let id = state.withLock { state -> UInt64? in
      state.nextID += 1
      if state.admission.fitsNow(weight) {
        _ = state.admission.request(id: state.nextID, bytes: weight)
        return nil
      }
      return state.nextID
    }
    guard let id else { return .granted }
    return await withTaskCancellationHandler {
      await withCheckedContinuation { continuation in
        let answer = state.withLock { state -> Outcome? in
          // Checked under the lock: a cancellation that came before this line finds no waiter to resume.
          if Task.isCancelled { return .cancelled }
          switch state.admission.request(id: id, bytes: weight) {
          case .granted: return .granted
          case .neverFits: return .neverFits
          case .queued:
            state.waiters[id] = continuation
            return nil
          }
        }
        if let answer { continuation.resume(returning: answer) }
      }
    } onCancel: {
      let (cancelled, granted) = state.withLock { state in
        let granted = state.admission.cancel(id: id).granted.compactMap {
          state.waiters.removeValue(forKey: $0)
        }
        return (state.waiters.removeValue(forKey: id), granted)
      }
      cancelled?.resume(returning: .cancelled)
      granted.forEach { $0.resume(returning: .granted) }
    }
  }

  func release(_ weight: Int) {
    let granted = state.withLock { state in
      state.admission.release(bytes: weight).compactMap { state.waiters.removeValue(forKey: $0) }
    }
    granted.forEach { $0.resume(returning: .granted) }
  }
}
