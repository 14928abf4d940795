import Synchronization

/// Set once when the process is asked to stop (SIGTERM/SIGINT). Slots check it between jobs and cut
/// their idle sleeps short, so a stop takes effect within one poll tick, never in the middle of a job.
public final class ShutdownSignal: Sendable {
  private let requested = Atomic<Bool>(false)

  public init() {}

  public var isRequested: Bool { requested.load(ordering: .acquiring) }

  public func request() { requested.store(true, ordering: .releasing) }

  /// Sleeps up to `seconds`, returning early once a shutdown is requested.
  public func sleep(seconds: Double) async {
    var left = seconds
    while left > 0 && !isRequested {
      let step = min(left, 0.05)
      try? await Task.sleep(for: .seconds(step))
      left -= step
    }
  }
}
