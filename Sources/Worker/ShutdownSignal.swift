import Synchronization

/// Set once when the process is asked to stop (SIGTERM/SIGINT). The worker's loops check it between
/// jobs; a request also wakes every loop that registered a WakeSignal, so a stop is seen at once rather
/// than at the end of an idle wait.
///
/// A latch: a request made before the worker runs (a SIGTERM during the process's start-up) is kept, and
/// the worker stops as soon as it starts.
public final class ShutdownSignal: Sendable {
  private let requested = Atomic<Bool>(false)
  private let why = Mutex<String?>(nil)
  private let observers = Mutex<[WakeSignal]>([])
  private let actions = Mutex<[@Sendable () -> Void]>([])

  public init() {}

  public var isRequested: Bool { requested.load(ordering: .acquiring) }

  /// Who asked first (`SIGTERM`, `the group`, ...); nil while nobody has.
  public var reason: String? { why.withLock { $0 } }

  /// Asks the worker to stop; only the first request acts.
  public func request(reason: String = "requested") {
    why.withLock { $0 = $0 ?? reason }
    guard !requested.exchange(true, ordering: .acquiringAndReleasing) else { return }
    observers.withLock { $0 }.forEach { $0.signal() }
    actions.withLock { $0 }.forEach { $0() }
  }

  /// Runs `action` once when a stop is requested (at once if it already was).
  public func onRequest(_ action: @escaping @Sendable () -> Void) {
    actions.withLock { $0.append(action) }
    if isRequested { action() }
  }

  /// Signals `wake` when a shutdown is requested (at once if it already was).
  public func notify(_ wake: WakeSignal) {
    observers.withLock { $0.append(wake) }
    if isRequested { wake.signal() }
  }

  /// Sleeps up to `seconds`, returning early once a shutdown is requested.
  public func sleep(seconds: Double) async {
    let wake = WakeSignal()
    notify(wake)
    defer { observers.withLock { $0.removeAll { $0 === wake } } }
    if !isRequested { await wake.wait(timeout: seconds) }
  }
}
