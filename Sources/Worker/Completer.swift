import Logging
import Queue
import ServiceLifecycle
import Synchronization
import ThumbCore

/// Where the outcomes of held jobs go: the worker's `Completer`; a test's own, to run `JobRunner`
/// without a database.
protocol OutcomeWriter: Sendable {
  /// Writes the outcome; nil when the database could not be reached (the lease will expire and the
  /// job run again).
  func record(_ job: LeasedJob, _ outcome: JobOutcome<JobResult>) async -> WriteAnswer?
  /// Makes the objects of a success that will not be written collection candidates.
  func releaseUnclaimed(_ storageKeys: [String]) async
}

extension Completer: OutcomeWriter {}

/// The statements a Completer runs: the queue's (`JobQueue`), or a test's own.
protocol OutcomeStatements: Sendable {
  func recordOutcomes(
    _ outcomes: [(job: LeasedJob, outcome: JobOutcome<JobResult>)]
  ) async throws(PostgresError) -> [Int64: WriteAnswer]
  func releaseUnclaimed(_ storageKeys: [String]) async throws(PostgresError) -> Int
}

extension JobQueue: OutcomeStatements {}

/// Writes job outcomes in batches, on a connection of its own.
///
/// Group commit: the first outcome to arrive starts a write at once (no timer, no added latency); the
/// outcomes that arrive while that write is in flight go together in the next one. Under load a batch
/// holds everything that finished during one round trip, so the database work per job shrinks as load
/// grows; at rest each outcome is written alone and immediately.
///
/// A service of the worker's group that stops after the producer: it writes every outcome (and hand-back)
/// the producer gave it before the keeper, which stops next, withdraws the worker.
final class Completer: Service, Sendable {
  private struct Pending {
    var job: LeasedJob
    var outcome: JobOutcome<JobResult>
    var written: CheckedContinuation<WriteAnswer?, Never>
  }

  private struct State {
    var pending: [Pending] = []
    var writing = false
  }

  private let queue: any OutcomeStatements
  private let logger: Logger
  private let state = Mutex(State())
  /// A batch is cut at this many jobs, so one statement's arrays stay a reasonable size.
  private let maxBatch = 500

  private let wroteBatch: @Sendable () -> Void
  private let activity: ServiceActivity.Reporter

  /// Between the tries of one batch (`retryBackoff` unless a test says otherwise).
  private let backoff: Backoff

  init(
    queue: any OutcomeStatements, logger: Logger, activity: ServiceActivity.Reporter,
    backoff: Backoff = Completer.retryBackoff, wroteBatch: @escaping @Sendable () -> Void = {}
  ) {
    self.queue = queue
    self.backoff = backoff
    self.logger = logger
    self.activity = activity
    self.wroteBatch = wroteBatch
  }

  /// Writes the outcome. Nil when the database could not be reached even after retries (the lease will
  /// expire and the job run again).
  func record(_ job: LeasedJob, _ outcome: JobOutcome<JobResult>) async -> WriteAnswer? {
    await withCheckedContinuation { continuation in
      let startWriter = state.withLock { state -> Bool in
        state.pending.append(Pending(job: job, outcome: outcome, written: continuation))
        if state.writing { return false }
        state.writing = true
        return true
      }
      if startWriter { Task { await self.writeUntilEmpty() } }
    }
  }

  /// The objects of a success that will not be written (its lease went while it rendered or stored):
  /// collection candidates, so that nothing stays in storage that nothing names. A failure leaves
  /// orphans that `thumbd gc` finds; it is logged.
  func releaseUnclaimed(_ storageKeys: [String]) async {
    guard !storageKeys.isEmpty else { return }
    do {
      _ = try await queue.releaseUnclaimed(storageKeys)
    } catch {
      logger.warning(
        "could not hand an abandoned job's uploads to collection",
        metadata: ["error": "\(error)", "objects": "\(storageKeys.count)"])
    }
  }

  /// Runs until the group stops, then until every outcome it was given is written.
  func run() async throws {
    activity.awaiting("its turn to stop")
    try? await gracefulShutdown()
    while let left = state.withLock({ $0.pending.isEmpty && !$0.writing ? nil : $0.pending.count }) {
      activity.awaiting("the write in flight and \(left) more outcomes")
      try? await Task.sleep(for: .milliseconds(10))
    }
  }

  private func writeUntilEmpty() async {
    while true {
      let batch = state.withLock { state -> [Pending] in
        let batch = Array(state.pending.prefix(maxBatch))
        state.pending.removeFirst(batch.count)
        if batch.isEmpty { state.writing = false }
        return batch
      }
      if batch.isEmpty { return }
      let answers = await write(batch)
      wroteBatch()
      for item in batch {
        item.written.resume(returning: answers.map { $0[item.job.id] ?? .leaseLost })
      }
    }
  }

  /// Between the tries of one batch: 0.25 s, doubling.
  static let retryBackoff = Backoff(first: .milliseconds(250), cap: nil)

  /// One batch, retried through short outages: the work is done, so it is worth waiting a little for the
  /// database rather than letting the lease expire and doing the job again.
  private func write(_ batch: [Pending]) async -> [Int64: WriteAnswer]? {
    for attempt in 1...5 {
      do {
        return try await queue.recordOutcomes(batch.map { ($0.job, $0.outcome) })
      } catch {
        logger.warning(
          "could not write job outcomes, will retry",
          metadata: ["error": "\(error)", "jobs": "\(batch.count)", "attempt": "\(attempt)"])
        try? await Task.sleep(for: backoff.delay(afterFailures: attempt))
      }
    }
    return nil
  }
}
