import Foundation
import Logging
import Queue
import Synchronization
import ThumbCore

/// The jobs this process holds: their leases (`LeaseBook`), their tasks, and what becomes of each. The
/// producer starts jobs here, the keeper extends and drops their leases here, and every outcome is
/// written through the Completer and counted in `WorkerMetrics` here.
final class JobRunner: Sendable {
  /// One job's work, run in an unstructured task so that abandoning it (lease lost, hand-back) frees its
  /// slot at once even while a blocking call it made is still running on a pool thread.
  struct Execution: Sendable {
    let job: LeasedJob
    let result: OneShot<Result<JobResult, JobError>?>
    let work: Task<Void, Never>

    func abandon() {
      result.resolve(nil)
      work.cancel()
    }
  }

  let book = Mutex(LeaseBook<Execution>())
  private let runningCount = Atomic<Int>(0)
  /// Running jobs whose work is done and whose outcome is being written (the Completer's round trip).
  private let finishingCount = Atomic<Int>(0)
  /// Jobs the storage refused in a row (reset by a success): how long the next one waits.
  private let refusalStreak = Atomic<Int>(0)
  /// The wait of a job the storage refused: 10 s doubling to 5 minutes, while the configuration is
  /// fixed. No attempt is used (JobOutcome.deferred).
  static let refusalBackoff = Backoff(first: .seconds(10), cap: .seconds(300), jitter: .shorterBy(0.25))
  /// Running jobs that gave their slot up while they wait for memory or a shared decode (SlotLease).
  private let asideCount = Atomic<Int>(0)
  /// Signalled when a job ends or steps aside: the producer may lease again.
  let wake = WakeSignal()
  private let slots: AdmissionGate
  private let handler: any JobHandler
  private let completer: Completer
  private let metrics: WorkerMetrics
  private let retryPolicy: RetryPolicy
  private let logger: Logger

  init(
    concurrency: Int, handler: any JobHandler, completer: Completer, metrics: WorkerMetrics,
    retryPolicy: RetryPolicy, logger: Logger
  ) {
    self.slots = AdmissionGate(capacity: concurrency)
    self.handler = handler
    self.completer = completer
    self.metrics = metrics
    self.retryPolicy = retryPolicy
    self.logger = logger
  }

  var running: Int { runningCount.load(ordering: .acquiring) }
  /// Running jobs that hold no slot and need no core any more: their outcome is being written. The
  /// producer leases for them at once, so that the next job's lease and fetch overlap the write instead
  /// of following it.
  var finishing: Int { finishingCount.load(ordering: .acquiring) }
  var aside: Int { asideCount.load(ordering: .acquiring) }

  /// Starts the jobs of one lease. Every job joins its URL's shared decode before any of them can start
  /// rendering; each then waits for a slot in lease order.
  func start(_ jobs: [LeasedJob], in group: inout DiscardingTaskGroup) {
    for job in jobs { handler.leased(job) }
    for job in jobs { start(job, in: &group) }
  }

  private func start(_ job: LeasedJob, in group: inout DiscardingTaskGroup) {
    runningCount.add(1, ordering: .acquiringAndReleasing)
    let result = OneShot<Result<JobResult, JobError>?>()
    let (handler, slots) = (self.handler, self.slots)
    let work = Task { [self] in
      // Every slot taken: the job waits, its original downloading meanwhile (the producer leases
      // `WorkerConfig.leaseAhead` jobs beyond the slots for this).
      guard await slots.acquire(1, whenQueued: { handler.waitingForSlot(job) }) == .granted else {
        // abandoned while waiting: already resolved
        handler.dropped(job)
        return
      }
      let lease = SlotLease(slots: slots) { change in
        self.asideCount.add(change, ordering: .acquiringAndReleasing)
        if change > 0 { self.wake.signal() }
      }
      let outcome = await SlotLease.$current.withValue(lease) {
        await Result { () async throws(JobError) in try await handler.process(job) }
      }
      // Counted as finishing before the slot (or the place among those standing aside) is given up, so
      // that the producer never counts the job twice as free. The task below that writes the outcome
      // uncounts it; if the job was abandoned meanwhile, nothing will be written: uncounted here.
      self.finishingCount.add(1, ordering: .acquiringAndReleasing)
      if !result.resolve(outcome) { self.finishingCount.subtract(1, ordering: .acquiringAndReleasing) }
      lease.end()
      self.wake.signal()
    }
    let superseded = book.withLock {
      $0.hold(id: job.id, token: job.leaseToken, payload: Execution(job: job, result: result, work: work))
    }
    superseded?.abandon()
    group.addTask {
      let outcome = await result.value
      await self.finish(job, outcome)
      handler.outcomeWritten(job)
      // Set by the job's own task when it resolved `result`; nil: abandoned, never counted.
      if outcome != nil { self.finishingCount.subtract(1, ordering: .acquiringAndReleasing) }
      self.runningCount.subtract(1, ordering: .acquiringAndReleasing)
      self.wake.signal()
    }
  }

  /// Writes the job's outcome, unless its lease is no longer ours.
  private func finish(_ job: LeasedJob, _ outcome: Result<JobResult, JobError>?) async {
    let jobLogger = logger.with(["job.id": "\(job.id)", "job.attempt": "\(job.attempt)"])
    guard let outcome, book.withLock({ $0.status(of: job.id, token: job.leaseToken) }) == .held else {
      // Abandoned: the keeper logged the lost lease, or the stop path handed the job back.
      _ = book.withLock { $0.release(id: job.id, token: job.leaseToken) }
      return
    }
    let write: JobOutcome
    switch outcome {
    case .success(let records):
      write = .succeeded(records)
      refusalStreak.store(0, ordering: .relaxed)
    case .failure(let error) where error.code == .storageRefused:
      let streak = refusalStreak.add(1, ordering: .relaxed).newValue
      write = .deferred(
        error, retryAfter: Self.refusalBackoff.seconds(afterFailures: streak, unit: Double.random(in: 0..<1)))
    case .failure(let error):
      let decision = retryPolicy.decide(
        code: error.code, attempt: job.attempt, maxAttempts: job.maxAttempts, unit: Double.random(in: 0..<1))
      if case .retry(let seconds) = decision {
        write = .failed(error, retryAfter: max(seconds, error.retryNotBeforeSeconds ?? 0))
      } else {
        write = .failed(error, retryAfter: nil)
      }
    }
    let written = await completer.record(job, write)
    let endedAs = book.withLock { $0.release(id: job.id, token: job.leaseToken) }
    switch (written, write) {
    case (true?, .succeeded(let result)):
      metrics.job(.succeeded)
      jobLogger.info("job succeeded", metadata: ["job.variants": "\(result.variants.count)"])
    case (true?, .failed(let error, let retryAfter)):
      metrics.job(retryAfter == nil ? .failed : .retried, code: error.code)
      jobLogger.notice(
        retryAfter == nil ? "job failed" : "job will retry",
        metadata: [
          "error.code": "\(error.code.rawValue)", "error.message": "\(error.message)",
          "retry.after_seconds": "\(retryAfter.map { String(format: "%.1f", $0) } ?? "-")",
        ])
    case (true?, .deferred(let error, let retryAfter)):
      metrics.job(.retried, code: error.code)
      // Loud: every job waits until someone fixes the storage configuration.
      jobLogger.error(
        "storage refuses this worker's requests: fix the storage configuration; the job is queued again without using an attempt",
        metadata: [
          "error.code": "\(error.code.rawValue)", "error.message": "\(error.message)",
          "retry.after_seconds": "\(String(format: "%.1f", retryAfter))",
        ])
    case (false?, _) where endedAs == .held:
      metrics.leaseLost()
      jobLogger.warning(
        "lease_lost job_id=\(job.id): the outcome was refused (lease expired or job cancelled); results discarded"
      )
    case (nil, _):
      // The database stayed unreachable. The lease will expire and the job will run again: nothing is
      // lost, at worst the work is repeated.
      jobLogger.error("could not record the job's outcome; its lease will expire and it will run again")
    default:
      break  // lost or handed back meanwhile: already logged where that was found
    }
  }

  /// Hands back every job still held (queued again at once, the attempt not counted) and abandons its
  /// work: the end of a graceful stop.
  func handBackAll() async {
    let leftovers = book.withLock { $0.handBackAll() }
    if leftovers.isEmpty { return }
    let returned = await withTaskGroup(of: Bool.self) { group in
      for leftover in leftovers {
        group.addTask { await self.completer.record(leftover.payload.job, .handedBack) == true }
      }
      return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
    }
    for _ in 0..<returned { metrics.job(.handedBack) }
    logger.notice(
      "handed back unfinished jobs",
      metadata: ["job.ids": "\(leftovers.map(\.id))", "jobs.returned": "\(returned)"])
    leftovers.forEach { $0.payload.abandon() }
  }

  /// Abandons the jobs whose lease the database refused to extend.
  func leasesLost(_ lost: [(Int64, Execution)]) {
    for (id, execution) in lost {
      metrics.leaseLost()
      logger.warning(
        "lease_lost job_id=\(id): heartbeat refused (job cancelled, or lease expired and taken); work abandoned"
      )
      execution.abandon()
    }
  }
}

extension Logger {
  func with(_ metadata: Logger.Metadata) -> Logger {
    var copy = self
    for (key, value) in metadata { copy[metadataKey: key] = value }
    return copy
  }
}
