import Logging
import Metrics
import Queue
import Synchronization
import ThumbCore

@testable import Worker

/// What the tests of the long-lived services share: a handler whose jobs end when the test says, an
/// outcome writer that keeps what it is given, a listener switch that keeps what it is told, and the
/// context a service works from. No database, network or storage.
enum ServiceFakes {
  static func job(_ id: Int64) -> LeasedJob {
    LeasedJob(id: id, sourceURL: "https://origin.test/\(id).jpg", leaseToken: "token\(id)")
  }

  /// Waits (up to 5 s) until `condition` holds.
  static func eventually(_ condition: () -> Bool) async -> Bool {
    for _ in 0..<500 {
      if condition() { return true }
      try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
  }

  /// A handler whose jobs run until the test ends them (`finish`), or at once when `instant`; a job
  /// whose work is abandoned (cancelled) ends then.
  final class Handler: JobHandler {
    let instant: Bool
    let started = Mutex<[Int64]>([])
    private let ends = Mutex<[Int64: OneShot<Void>]>([:])

    init(instant: Bool = false) { self.instant = instant }

    private func end(_ id: Int64) -> OneShot<Void> {
      ends.withLock { ends in
        if let end = ends[id] { return end }
        let end = OneShot<Void>()
        ends[id] = end
        return end
      }
    }

    func finish(_ id: Int64) { end(id).resolve(()) }

    func process(_ job: LeasedJob, _ life: JobLife) async throws(JobError) -> JobResult {
      started.withLock { $0.append(job.id) }
      if !instant {
        let end = end(job.id)
        await withTaskCancellationHandler {
          await end.value
        } onCancel: {
          end.resolve(())
        }
      }
      return JobResult(variants: [])
    }
  }

  /// Keeps every outcome it is asked to write.
  final class Writer: OutcomeWriter {
    let written = Mutex<[Int64: JobOutcome<JobResult>]>([:])

    func record(_ job: LeasedJob, _ outcome: JobOutcome<JobResult>) async -> WriteAnswer? {
      written.withLock { $0[job.id] = outcome }
      return .written
    }

    func releaseUnclaimed(_ storageKeys: [String]) async {}
  }

  /// Keeps what the keeper told the listener, in order: what the registry answered (`watching`).
  final class Switch: ListenerSwitch {
    let watches = Mutex<[Bool]>([])

    func watching(_ on: Bool) { watches.withLock { $0.append(on) } }
  }

  /// A service's context: a runner of `handler`'s jobs writing to `writer`, and readiness, a stop signal
  /// and counters of its own.
  static func context(
    _ config: WorkerConfig, handler: Handler = Handler(), writer: Writer = Writer(),
    logger: Logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
  ) -> ServiceContext {
    let metrics = WorkerMetrics(factory: NOOPMetricsHandler.instance)
    let runner = JobRunner(
      settings: config.heldJobs(), handler: handler, completer: writer, metrics: metrics, logger: logger)
    return ServiceContext(
      runner: runner, readiness: Readiness(livenessWindow: .seconds(60)), shutdown: ShutdownSignal(),
      metrics: metrics, config: config, logger: logger)
  }
}
