import Dispatch
import Foundation
import Synchronization

/// The one owner of SIGTERM and SIGINT in a worker process, installed first thing in the command: the
/// first signal requests a graceful stop (`ShutdownSignal`), a second one exits at once with 130.
///
/// Why one owner, from the start: libdispatch takes a signal away from its default action as soon as any
/// dispatch source for it is registered, and every source registered then gets it. Two owners registered
/// at different moments (a second-signal counter early, the service group's own handler later, when it
/// starts) left a window in which a SIGTERM reached only the first: it was counted, nobody stopped, and
/// the worker went on to start and run as if never asked. A request made here before the worker runs
/// is kept by the ShutdownSignal latch and stops the worker as soon as it starts.
///
/// `@unchecked Sendable`: `sources` is written once in `init` and never again; it only keeps the
/// sources alive and cancels them at the end.
public final class StopSignals: @unchecked Sendable {
  private let sources: [any DispatchSourceSignal]
  private let received = Atomic<Int>(0)

  /// Registers the sources for `signals` (the command passes SIGTERM and SIGINT) and returns once the
  /// kernel side is in place, so no signal sent after this returns can be missed.
  public static func install(
    _ signals: [Int32], requesting shutdown: ShutdownSignal, secondSignalExitCode: Int32 = 130
  ) async -> StopSignals {
    let stops = StopSignals(signals, shutdown: shutdown, exitCode: secondSignalExitCode)
    for source in stops.sources {
      await withCheckedContinuation { (registered: CheckedContinuation<Void, Never>) in
        source.setRegistrationHandler { registered.resume() }
        source.resume()
      }
    }
    return stops
  }

  private init(_ signals: [Int32], shutdown: ShutdownSignal, exitCode: Int32) {
    let queue = DispatchQueue(label: "thumbd-stop-signals")
    sources = signals.map { number in DispatchSource.makeSignalSource(signal: number, queue: queue) }
    for (number, source) in zip(signals, sources) {
      source.setEventHandler { [weak self] in
        guard let self else { return }
        // A signal source coalesces signals that arrive together: count what the source saw.
        let count = received.add(Int(source.data), ordering: .acquiringAndReleasing).newValue
        if count >= 2 { Foundation.exit(exitCode) }
        shutdown.request(reason: Self.name(of: number))
      }
    }
  }

  deinit {
    sources.forEach { $0.cancel() }
  }

  /// How many stop signals arrived so far.
  public var count: Int { received.load(ordering: .acquiring) }

  static func name(of signal: Int32) -> String {
    switch signal {
    case SIGTERM: "SIGTERM"
    case SIGINT: "SIGINT"
    default: "signal \(signal)"
    }
  }
}
