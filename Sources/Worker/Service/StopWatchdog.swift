import Dispatch
import Foundation
import Logging
import Synchronization
import ThumbCore

/// The last line of defence of a graceful stop: armed when the stop begins (a stop request, or a service
/// that ended by itself), it waits out the shutdown grace plus a margin on a dispatch timer, outside
/// Swift's task pool. If the worker has not finished stopping by then, it logs every service still
/// running with what each awaits and since when, and ends the process with exit code 70. A worker never
/// hangs in its stop; its leases expire and its jobs are rescued, as after a kill.
final class StopWatchdog: Sendable {
  /// EX_SOFTWARE: the stop overran; docs/operations.md tells what to do with the log lines before it.
  static let exitCode: Int32 = 70
  /// Beyond the grace: the hand-back write, the registry withdrawal and closing the connections. The
  /// deploy files leave as much between the grace and their kill (deploy/k8s, deploy/systemd).
  static let defaultMargin: Duration = .seconds(15)

  /// Armed at most once, and never again once disarmed or expired: one deadline per worker run.
  private enum State {
    case idle
    case armed
    case done
  }

  private let state = Mutex(State.idle)
  private let limit: Duration
  private let activity: ServiceActivity
  private let logger: Logger
  private let terminate: @Sendable (Int32) -> Void

  /// `terminate` ends the process (tests pass one that records the call instead).
  init(
    grace: Duration, margin: Duration = defaultMargin, activity: ServiceActivity, logger: Logger,
    terminate: @escaping @Sendable (Int32) -> Void = StopWatchdog.exitNow
  ) {
    self.limit = grace + margin
    self.activity = activity
    self.logger = logger
    self.terminate = terminate
  }

  /// Starts the countdown, once: later calls keep the first deadline.
  func arm(because reason: String) {
    let first = state.withLock { current -> Bool in
      guard current == .idle else { return false }
      current = .armed
      return true
    }
    guard first else { return }
    logger.debug(
      "stop watchdog armed", metadata: ["reason": "\(reason)", "limit_seconds": "\(limit.inSeconds)"])
    let nanoseconds = Int(limit.inSeconds * 1e9)
    DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [self] in
      expire()
    }
  }

  /// The stop finished in time.
  func disarm() {
    state.withLock { $0 = .done }
  }

  private func expire() {
    let due = state.withLock { current -> Bool in
      guard current == .armed else { return false }
      current = .done
      return true
    }
    guard due else { return }
    let stuck = activity.unfinished
    // The group asks one service at a time, in reverse order: the one asked and still running held
    // the stop up; the others wait for their turn.
    let holding = stuck.filter { $0.entry.stopAsked }.map(\.name)
    logger.critical(
      "graceful stop overran the shutdown grace plus its margin: exiting",
      metadata: [
        "limit_seconds": "\(limit.inSeconds)", "exit_code": "\(Self.exitCode)",
        "services.running": "\(stuck.map(\.name).joined(separator: ","))",
        "services.holding_the_stop": "\(holding.joined(separator: ","))",
      ])
    for (name, entry) in stuck {
      logger.critical(
        "service still running",
        metadata: [
          "service": "\(name)", "service.asked_to_stop": "\(entry.stopAsked)",
          "awaiting": "\(entry.awaiting)",
          "awaiting.seconds": "\(String(format: "%.1f", entry.since.duration(to: .now).inSeconds))",
        ])
    }
    terminate(Self.exitCode)
  }

  /// Flushes what was logged and exits without running atexit handlers, which could wait on the very
  /// thing that is stuck.
  static func exitNow(_ code: Int32) {
    fflush(nil)
    _exit(code)
  }
}
