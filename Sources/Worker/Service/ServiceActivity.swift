import Logging
import ServiceLifecycle
import Synchronization

/// What each service of the worker is doing now: whether it runs, whether its turn to stop has come, and
/// what it awaits (set by the service at each wait that can last). The stop watchdog reads it when a
/// graceful stop overruns, so that a stop that never ends names the wait that never ended.
final class ServiceActivity: Sendable {
  struct Entry: Sendable, Equatable {
    var running = false
    /// The group asked this service to stop (its turn in the reverse order came).
    var stopAsked = false
    var awaiting = "its start"
    var since: ContinuousClock.Instant
  }

  /// One service's view: it says what it awaits, by its own name.
  struct Reporter: Sendable {
    let name: String
    let activity: ServiceActivity

    func awaiting(_ what: String) { activity.update(name) { $0.awaiting = what } }
  }

  private let entries = Mutex<[(name: String, entry: Entry)]>([])

  init() {}

  /// The service's reporter. Services are listed in the order of their last call here: the worker asks
  /// once more for each as it adds it to the group, so the list follows the group's order.
  func reporter(for name: String) -> Reporter {
    entries.withLock { entries in
      let entry = entries.firstIndex { $0.name == name }.map { entries.remove(at: $0).entry }
      entries.append((name, entry ?? Entry(since: .now)))
    }
    return Reporter(name: name, activity: self)
  }

  /// The services that have not ended, in the order they were listed, with what each awaits.
  var unfinished: [(name: String, entry: Entry)] {
    entries.withLock { entries in entries.filter { $0.entry.running } }
  }

  fileprivate func update(_ name: String, _ change: (inout Entry) -> Void) {
    entries.withLock { entries in
      guard let index = entries.firstIndex(where: { $0.name == name }) else { return }
      let before = entries[index].entry.awaiting
      change(&entries[index].entry)
      if entries[index].entry.awaiting != before { entries[index].entry.since = .now }
    }
  }

  fileprivate func started(_ name: String) {
    update(name) { $0.running = true }
  }

  fileprivate func ended(_ name: String) {
    update(name) {
      $0.running = false
      $0.awaiting = "nothing: ended"
    }
  }

  fileprivate func stopAsked(_ name: String) {
    update(name) { $0.stopAsked = true }
  }
}

/// Runs a service and keeps its `ServiceActivity` entry: started, asked to stop, ended. `ended` is called
/// when the service returns or throws, whatever the reason (the group stops when any service ends).
struct TrackedService: Service {
  let service: any Service
  let reporter: ServiceActivity.Reporter
  let ended: @Sendable () -> Void

  func run() async throws {
    reporter.activity.started(reporter.name)
    defer {
      reporter.activity.ended(reporter.name)
      ended()
    }
    try await withGracefulShutdownHandler {
      try await service.run()
    } onGracefulShutdown: { [reporter] in
      reporter.activity.stopAsked(reporter.name)
    }
  }
}
