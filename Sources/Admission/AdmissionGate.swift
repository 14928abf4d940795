import Synchronization
import ThumbCore

/// Waits until a weighted share of a capacity is free, first come first served (ByteAdmission's rules):
/// the worker's memory (capacity `--memory-budget`, weight a decode's predicted peak bytes).
///
/// It also counts originals: downloads take bytes as their bodies grow (`take`, never
/// waiting: a download that is refused pauses until `wake` is called) and the original they become
/// keeps them until its last holder (a job, the original cache) lets it go.
public final class AdmissionGate: Sendable {
  private struct State {
    var admission: ByteAdmission
    var waiters: [UInt64: CheckedContinuation<Outcome, Never>] = [:]
    /// Paused downloads, to wake when memory may have been given back.
    var wakes: [@Sendable () -> Void] = []
    var nextID: UInt64 = 0
    /// A relief (cache eviction, then yields) is under way: do not start another from inside it.
    var relieving = false
  }

  public enum Outcome: Equatable, Sendable {
    case granted
    /// The task was cancelled while waiting: nothing is held.
    case cancelled
    /// The weight (with what the requester holds) is more than the whole capacity.
    case neverFits
    /// Nothing held by granted requests was left to free the memory the first request in line needs,
    /// and this request's original was in the way: the requester should let its original go, wait its
    /// turn holding nothing, and fetch it again.
    case yield
  }

  private let state: Mutex<State>
  /// Each frees at least the given number of bytes if it can (kept plane buffers are dropped, the original
  /// cache drops its least recently used entries). Called in turn, without the gate's lock held.
  private let relief = Mutex<[@Sendable (Int) -> Void]>([])
  public let capacity: Int

  /// `maxOvertakes`: how many later requests that fit may start ahead of one that does not.
  public init(capacity: Int, maxOvertakes: Int = 0) {
    self.capacity = capacity
    state = Mutex(State(admission: ByteAdmission(capacity: capacity, maxOvertakes: maxOvertakes)))
  }

  /// What to call when the first request in line lacks memory and no granted request will give any back.
  /// Several may be given: they are called in the order given, each with what is still short, until
  /// nothing is.
  public func onShortfall(_ relieve: @escaping @Sendable (Int) -> Void) {
    relief.withLock { $0.append(relieve) }
  }

  /// Waits until `weight` fits. `held`: bytes of original the caller already holds (counted by `take`)
  /// and keeps while its request runs. `whenQueued` is called, once and before any waiting, if the
  /// request has to wait.
  public func acquire(_ weight: Int, held: Int = 0, whenQueued: (() -> Void)? = nil) async -> Outcome {
    if weight + held > capacity { return .neverFits }
    // The common case, room now and nobody waiting, takes no continuation: no suspension per job.
    let id = state.withLock { state -> UInt64? in
      state.nextID += 1
      if state.admission.fitsNow(weight) {
        _ = state.admission.request(id: state.nextID, bytes: weight, held: held)
        return nil
      }
      return state.nextID
    }
    guard let id else { return .granted }
    whenQueued?()
    return await withTaskCancellationHandler {
      await withCheckedContinuation { continuation in
        let (answer, effects) = state.withLock { state -> (Outcome?, Effects) in
          // Checked under the lock: a cancellation that came before this line finds no waiter to resume.
          if Task.isCancelled { return (.cancelled, Effects()) }
          switch state.admission.request(id: id, bytes: weight, held: held) {
          case .granted: return (.granted, Effects())
          case .neverFits: return (.neverFits, Effects())
          case .queued:
            state.waiters[id] = continuation
            return (nil, Self.effects(of: [], &state))
          }
        }
        if let answer { continuation.resume(returning: answer) }
        perform(effects)
      }
    } onCancel: {
      let (cancelled, effects) = state.withLock { state in
        let granted = state.admission.cancel(id: id).granted
        return (state.waiters.removeValue(forKey: id), Self.effects(of: granted, &state))
      }
      cancelled?.resume(returning: .cancelled)
      perform(effects)
    }
  }

  public func release(_ weight: Int) {
    perform(state.withLock { state in Self.effects(of: state.admission.release(bytes: weight), &state) })
  }

  /// Takes `bytes` now if they fit; otherwise calls `wake` once, later, when memory may have been given
  /// back (the caller then tries again).
  public func take(_ bytes: Int, orWake wake: @escaping @Sendable () -> Void) -> Bool {
    let (taken, effects) = state.withLock { state -> (Bool, Effects) in
      if state.admission.take(bytes) { return (true, Effects()) }
      state.wakes.append(wake)
      // Not woken here (it would be refused again at once), but the cache may make room: nothing else
      // may be left to give memory back.
      var effects = Effects()
      if !state.relieving {
        state.relieving = true
        effects.shortfall = max(1, state.admission.inUse + bytes - state.admission.capacity)
      }
      return (false, effects)
    }
    perform(effects)
    return taken
  }

  /// Takes `bytes` for memory kept only while there is room (PlaneRecycler): only if they fit now and no
  /// request waits. Never wakes or relieves anything.
  public func takeIfRoom(_ bytes: Int) -> Bool {
    state.withLock { state in state.admission.queuedCount == 0 && state.admission.take(bytes) }
  }

  public func give(_ bytes: Int) {
    perform(state.withLock { state in Self.effects(of: state.admission.give(bytes), &state) })
  }

  /// Bytes held now (requests and takes): for tests and logs.
  public var inUse: Int { state.withLock { $0.admission.inUse } }
  /// Requests waiting: for tests and logs.
  public var queuedCount: Int { state.withLock { $0.admission.queuedCount } }

  /// What a change of the books sets in motion, done after the lock is released: requests to resume,
  /// paused downloads to wake, and whether the shortfall needs relief.
  private struct Effects {
    var granted: [CheckedContinuation<Outcome, Never>] = []
    var wakes: [@Sendable () -> Void] = []
    var shortfall = 0
  }

  /// `relieving`: false when the change comes from a relief itself (one relief per event, no loop).
  private static func effects(
    of grantedIDs: [UInt64], _ state: inout State, relieving: Bool = true
  ) -> Effects {
    var effects = Effects()
    for id in grantedIDs {
      if let waiter = state.waiters.removeValue(forKey: id) { effects.granted.append(waiter) }
    }
    effects.wakes = state.wakes
    state.wakes.removeAll()
    // Relief as soon as the first request in line lacks memory: a cached original nobody uses is worth
    // less than a decode started now.
    if relieving, state.admission.shortfall > 0, !state.relieving {
      state.relieving = true
      effects.shortfall = state.admission.shortfall
    }
    return effects
  }

  private func perform(_ effects: Effects) {
    effects.granted.forEach { $0.resume(returning: .granted) }
    effects.wakes.forEach { $0() }
    guard effects.shortfall > 0 else { return }
    // First what costs nothing but a page fault or a cache miss later: kept buffers, cached originals
    // nobody is using.
    var short = effects.shortfall
    for relieve in relief.withLock({ $0 }) where short > 0 {
      let before = inUse
      relieve(short)
      short -= before - inUse
    }
    // Then, if no granted request will give memory back, the originals of requests queued behind the
    // first: they cannot run before it anyway.
    let (yielded, more) = state.withLock { state -> ([CheckedContinuation<Outcome, Never>], Effects) in
      state.relieving = false
      // Their memory comes back when they let their originals go, which wakes the gate again.
      guard let (withdrawn, granted) = state.admission.withdrawHoldersBehindHead() else {
        return ([], Effects())
      }
      let yielded = withdrawn.compactMap { state.waiters.removeValue(forKey: $0) }
      return (yielded, Self.effects(of: granted, &state, relieving: false))
    }
    yielded.forEach { $0.resume(returning: .yield) }
    perform(more)
  }
}
