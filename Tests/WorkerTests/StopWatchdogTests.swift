import Logging
import ServiceLifecycle
import Synchronization
import Testing

@testable import Worker

/// The stop watchdog on a short deadline, with a `terminate` that records the call: no process ends.
@Suite struct StopWatchdogTests {
  /// Keeps every line logged, with its metadata.
  final class Lines: Sendable {
    let lines = Mutex<[(message: String, metadata: Logger.Metadata)]>([])

    var logger: Logger {
      Logger(label: "test") { _ in Handler(lines: self) }
    }

    struct Handler: LogHandler {
      let lines: Lines
      var metadata: Logger.Metadata = [:]
      var logLevel: Logger.Level = .trace

      subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
      }

      func log(event: LogEvent) {
        lines.lines.withLock {
          $0.append((event.message.description, metadata.merging(event.metadata ?? [:]) { $1 }))
        }
      }
    }
  }

  /// The exit codes `terminate` was called with.
  final class Codes: Sendable {
    let codes = Mutex<[Int32]>([])
    var all: [Int32] { codes.withLock { $0 } }
    func record(_ code: Int32) { codes.withLock { $0.append(code) } }
  }

  /// A service that runs until its task is cancelled.
  struct Stuck: Service {
    func run() async throws {
      while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(5)) }
    }
  }

  /// Waits (up to 5 s) until `condition` holds.
  func eventually(_ condition: () -> Bool) async -> Bool {
    for _ in 0..<500 {
      if condition() { return true }
      try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
  }

  @Test func anOverrunStopNamesWhatEachServiceAwaitsAndEndsWith70() async {
    let (activity, lines, codes) = (ServiceActivity(), Lines(), Codes())
    let reporter = activity.reporter(for: "producer")
    let service = Task {
      try await TrackedService(service: Stuck(), reporter: reporter, ended: {}).run()
    }
    defer { service.cancel() }
    #expect(await eventually { activity.unfinished.map(\.name) == ["producer"] })
    reporter.awaiting("the hand-back of the jobs still running")
    let watchdog = StopWatchdog(
      grace: .zero, margin: .milliseconds(50), activity: activity, logger: lines.logger,
      terminate: { codes.record($0) })
    watchdog.arm(because: "stop requested")
    watchdog.arm(because: "the producer service ended")  // the first deadline stands
    #expect(await eventually { !codes.all.isEmpty })
    #expect(codes.all == [StopWatchdog.exitCode])
    let stuck = lines.lines.withLock { $0 }.first { $0.message == "service still running" }
    #expect(stuck?.metadata["service"] == "producer")
    #expect(stuck?.metadata["awaiting"] == "the hand-back of the jobs still running")
    // Expired once: a later disarm or arm changes nothing.
    watchdog.arm(because: "again")
    try? await Task.sleep(for: .milliseconds(150))
    #expect(codes.all.count == 1)
  }

  @Test func aStopThatEndsInTimeIsLeftAlone() async {
    let codes = Codes()
    let watchdog = StopWatchdog(
      grace: .zero, margin: .milliseconds(50), activity: ServiceActivity(), logger: Lines().logger,
      terminate: { codes.record($0) })
    watchdog.arm(because: "stop requested")
    watchdog.disarm()
    try? await Task.sleep(for: .milliseconds(200))
    #expect(codes.all.isEmpty)
  }
}
