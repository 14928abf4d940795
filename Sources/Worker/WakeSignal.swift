import Synchronization

/// Wakes one waiting loop: a notification arrived, a job finished, the worker is stopping.
///
/// Signals are not counted, they are remembered: a signal sent while nobody waits makes the next `wait`
/// return at once, so a wake-up between "found nothing" and "start waiting" is never lost.
public final class WakeSignal: Sendable {
  private struct State {
    var pending = false
    var waiter: CheckedContinuation<Void, Never>?
    var generation = 0
  }

  private let state = Mutex(State())

  public init() {}

  public func signal() {
    let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
      if let waiter = state.waiter {
        state.waiter = nil
        return waiter
      }
      state.pending = true
      return nil
    }
    waiter?.resume()
  }

  /// Returns when signalled (now or since the last wait) or after `timeout` seconds. One waiter at a time.
  public func wait(timeout: Double) async {
    var timer: Task<Void, Never>?
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let generation = state.withLock { state -> Int? in
        if state.pending {
          state.pending = false
          return nil
        }
        precondition(state.waiter == nil, "WakeSignal has one waiter at a time")
        state.generation += 1
        state.waiter = continuation
        return state.generation
      }
      guard let generation else { return continuation.resume() }
      timer = Task {
        try? await Task.sleep(for: .seconds(max(0, timeout)))
        self.expire(generation)
      }
    }
    timer?.cancel()
  }

  /// Ends the wait of `generation` if it is still waiting (the timeout fired before any signal).
  private func expire(_ generation: Int) {
    let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
      guard state.generation == generation, let waiter = state.waiter else { return nil }
      state.waiter = nil
      return waiter
    }
    waiter?.resume()
  }
}

/// Whether something happened since the last look: raised by one side, taken (and lowered) by the other.
public final class RaisedFlag: Sendable {
  private let raised = Atomic<Bool>(false)

  public init() {}

  public func raise() { raised.store(true, ordering: .releasing) }

  /// Whether it was raised since the last `take`; lowers it.
  public func take() -> Bool { raised.exchange(false, ordering: .acquiringAndReleasing) }
}

/// A value set once, by whichever comes first (the work's result, or "abandoned"), and awaited by one or
/// more tasks.
final class OneShot<Value: Sendable>: Sendable {
  private struct State {
    var value: Value?
    var waiters: [CheckedContinuation<Value, Never>] = []
  }

  private let state = Mutex(State())

  /// Sets the value unless it was set already; returns whether this call set it.
  @discardableResult
  func resolve(_ value: Value) -> Bool {
    let waiters = state.withLock { state -> [CheckedContinuation<Value, Never>]? in
      guard state.value == nil else { return nil }
      state.value = value
      defer { state.waiters = [] }
      return state.waiters
    }
    waiters?.forEach { $0.resume(returning: value) }
    return waiters != nil
  }

  var isResolved: Bool { state.withLock { $0.value != nil } }

  var value: Value {
    get async {
      await withCheckedContinuation { continuation in
        let ready = state.withLock { state -> Value? in
          if let value = state.value { return value }
          state.waiters.append(continuation)
          return nil
        }
        if let ready { continuation.resume(returning: ready) }
      }
    }
  }
}
