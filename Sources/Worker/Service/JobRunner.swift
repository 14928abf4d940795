import Foundation
import Logging
import Queue
import Synchronization
import ThumbCore

/// Runs the jobs this process holds. Every decision about them (slots, leases, outcomes, waits) is made
/// by `HeldJobs`, kept here under one lock; this performs the actions it returns, outside the lock: it
/// starts each job's work, writes outcomes through the Completer, abandons work whose lease is gone,
/// and counts and logs what became of each job.
final class JobRunner: Sendable {
  typealias Jobs = HeldJobs<Execution>

  /// One job's work, run in an unstructured task so that abandoning it (lease lost, hand-back) ends the
  /// job at once even while a blocking call it made is still running on a pool thread.
  final class Execution: Sendable {
    let job: LeasedJob
    let lease: JobLease
    /// The outcome to write, or nil: abandoned, nothing to write.
    let ended = OneShot<(outcome: JobOutcome, variants: Int)?>()
    private let task = Mutex<(task: Task<Void, Never>?, abandoned: Bool)>((nil, false))
    /// What this job renders for the other members of its render group, when it leads it.
    let share = RenderShare()
    /// What the work made, kept for the outcome.
    let result = Mutex<JobResult?>(nil)
    /// Resolved when a wait for another job's outcome (render reuse) may end.
    let reuseWait = Mutex<OneShot<Void>?>(nil)

    init(_ job: LeasedJob) {
      self.job = job
      self.lease = JobLease(id: job.id, token: job.leaseToken)
    }

    func begin(_ body: @escaping @Sendable () async -> Void) {
      task.withLock { state in
        guard !state.abandoned else { return }
        state.task = Task { await body() }
      }
    }

    func abandon() {
      ended.resolve(nil)
      task.withLock { state in
        state.abandoned = true
        state.task?.cancel()
      }
      reuseWait.withLock { $0 }?.resolve(())
    }
  }

  private let jobs: Mutex<Jobs>
  /// Signalled when a job ends or steps aside: the producer may lease again.
  let wake = WakeSignal()
  /// Raised by the listener for each notification of enqueued jobs (the producer may lease one more).
  let notified = RaisedFlag()
  private let handler: any JobHandler
  private let completer: Completer
  private let metrics: WorkerMetrics
  private let logger: Logger

  init(
    settings: Jobs.Settings, handler: any JobHandler, completer: Completer, metrics: WorkerMetrics,
    logger: Logger
  ) {
    self.jobs = Mutex(Jobs(settings))
    self.handler = handler
    self.completer = completer
    self.metrics = metrics
    self.logger = logger
  }

  /// Jobs held, from their lease until their outcome is written.
  var held: Int { jobs.withLock { $0.held } }
  /// Held jobs whose outcome is being written: they need no slot.
  var finishing: Int { jobs.withLock { $0.finishing } }
  /// Held jobs at work without a slot (waiting for memory, a shared decode, the storage).
  var aside: Int { jobs.withLock { $0.aside } }
  /// Where every held job is, for `/debug/jobs`.
  var snapshot: [Jobs.Snapshot] { jobs.withLock { $0.snapshot } }

  /// Runs one event on the held jobs and performs the actions it returns.
  private func modify(_ event: (inout Jobs) -> [Jobs.Action]) {
    perform(jobs.withLock { event(&$0) })
  }

  /// Starts the jobs of one lease. Each takes a free slot or waits for one, its original downloading
  /// meanwhile; its outcome is written from a task of the producer's group, which the producer awaits
  /// before it ends.
  func start(_ leased: [LeasedJob], in group: inout DiscardingTaskGroup) {
    let executions = leased.map(Execution.init)
    modify { jobs in
      jobs.leased(
        executions.map {
          .init(
            lease: $0.lease, url: $0.job.sourceURL, attempt: $0.job.attempt, maxAttempts: $0.job.maxAttempts,
            owner: $0.job.owner, work: $0)
        }, now: .now)
    }
    for execution in executions {
      group.addTask { await self.finish(execution) }
    }
  }

  private func perform(_ actions: [Jobs.Action]) {
    var wakeProducer = false
    for action in actions {
      switch action {
      case .start(let execution, let refusedBy):
        execution.begin { await self.work(execution, refusedBy: refusedBy) }
      case .prefetch(let url):
        handler.prefetch(url)
      case .abandon(let execution, let reason, _):
        if reason == .leaseLost {
          metrics.leaseLost()
          logger.warning(
            "lease_lost job_id=\(execution.job.id): heartbeat refused (job cancelled, or lease expired and taken); work abandoned"
          )
        }
        execution.abandon()
      case .writeOutcome(let execution, let decision):
        execution.ended.resolve(Self.outcome(decision, of: execution))
      case .endReuseWait(let executions):
        for execution in executions { execution.reuseWait.withLock { $0 }?.resolve(()) }
      case .wakeProducer:
        wakeProducer = true
      }
    }
    if wakeProducer { wake.signal() }
  }

  private static func outcome(
    _ decision: Jobs.OutcomeDecision, of execution: Execution
  ) -> (outcome: JobOutcome, variants: Int)? {
    switch decision {
    case .succeeded:
      guard let result = execution.result.withLock({ $0 }) else { return nil }
      return (.succeeded(result), result.variants.count)
    case .failed(let error, let retryAfter): return (.failed(error, retryAfter: retryAfter), 0)
    case .deferred(let error, let retryAfter): return (.deferred(error, retryAfter: retryAfter), 0)
    }
  }

  /// The job's work, once it has a slot.
  private func work(_ execution: Execution, refusedBy: JobError?) async {
    let life = JobLife(runner: self, lease: execution.lease)
    let outcome: Result<JobResult, JobError>
    if let refusedBy {
      outcome = .failure(refusedBy)
    } else {
      outcome = await Result { () async throws(JobError) in try await handler.process(execution.job, life) }
    }
    let failure: JobError?
    switch outcome {
    case .success(let result):
      execution.result.withLock { $0 = result }
      failure = nil
    case .failure(let error):
      failure = error
    }
    var decided = false
    modify { jobs in
      let actions = jobs.workEnded(
        execution.lease, failure: failure, unit: Double.random(in: 0..<1), now: .now)
      decided = actions.contains {
        if case .writeOutcome(let work, _) = $0 { work.lease == execution.lease } else { false }
      }
      return actions
    }
    // The lease went while the job worked (abandoned): its success will never be written, and what it
    // uploaded is collection's to decide.
    if !decided, case .success(let result) = outcome {
      await completer.releaseUnclaimed(result.variants.map(\.storageKey))
    }
  }

  /// Writes the job's outcome once its work has ended, unless its lease is no longer ours; then lets the
  /// job go.
  private func finish(_ execution: Execution) async {
    let job = execution.job
    let ended = await execution.ended.value
    var written: Completer.Written?
    if let ended, jobs.withLock({ $0.mayWrite(execution.lease) }) {
      written = await completer.record(job, ended.outcome)
    } else if case .succeeded(let result)? = ended?.outcome {
      // The lease went between the work's end and the write: as for an abandoned job, above.
      await completer.releaseUnclaimed(result.variants.map(\.storageKey))
    }
    let release = jobs.withLock { $0.released(execution.lease) }
    perform(release.actions)
    if let url = release.prefetched { await handler.forgetPrefetch(url) }
    let endedIn = release.endedIn
    guard let ended else { return }  // abandoned: logged where the lease was found lost
    log(job, ended, written: written, stillHeld: endedIn == .writingOutcome)
  }

  private func log(
    _ job: LeasedJob, _ ended: (outcome: JobOutcome, variants: Int), written: Completer.Written?,
    stillHeld: Bool
  ) {
    let jobLogger = logger.with(["job.id": "\(job.id)", "job.attempt": "\(job.attempt)"])
    switch (written, ended.outcome) {
    case (.written?, .succeeded(let result)):
      metrics.job(.succeeded)
      jobLogger.info("job succeeded", metadata: ["job.variants": "\(ended.variants)"])
      for warning in result.warnings {
        metrics.warned(code: warning.code)
        jobLogger.warning(
          "job succeeded with a warning",
          metadata: ["warning.code": "\(warning.code)", "warning": "\(warning.message)"])
      }
    case (.written?, .failed(let error, let retryAfter)):
      metrics.job(retryAfter == nil ? .failed : .retried, code: error.code)
      jobLogger.notice(
        retryAfter == nil ? "job failed" : "job will retry",
        metadata: [
          "error.code": "\(error.code.rawValue)", "error.message": "\(error.message)",
          "retry.after_seconds": "\(retryAfter.map { String(format: "%.1f", $0) } ?? "-")",
        ])
    case (.written?, .deferred(let error, let retryAfter)):
      metrics.job(.retried, code: error.code)
      // Loud: every job waits until someone fixes the storage configuration.
      jobLogger.error(
        "storage refuses this worker's requests: fix the storage configuration (--storage, or --source-buckets and its bucket's policy for an s3:// original); the job is queued again without using an attempt",
        metadata: [
          "error.code": "\(error.code.rawValue)", "error.message": "\(error.message)",
          "retry.after_seconds": "\(String(format: "%.1f", retryAfter))",
        ])
    case (.refusedByCollection?, _):
      metrics.job(.retried, code: .storageFailed)
      jobLogger.notice(
        "job queued again: a thumbnail it made is being deleted by collection (another photo was forgotten or pruned); it runs again in a few seconds and stores it again"
      )
    case (.leaseLost?, _) where stillHeld:
      metrics.leaseLost()
      jobLogger.warning(
        "lease_lost job_id=\(job.id): the outcome was refused (lease expired or job cancelled); results discarded"
      )
    case (nil, _) where stillHeld:
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
    let leftovers = jobs.withLock { $0.handBackAll(now: .now) }
    if leftovers.isEmpty { return }
    let returned = await withTaskGroup(of: Bool.self) { group in
      for leftover in leftovers {
        group.addTask { await self.completer.record(leftover.job, .handedBack) == .written }
      }
      return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
    }
    for _ in 0..<returned { metrics.job(.handedBack) }
    logger.notice(
      "handed back unfinished jobs",
      metadata: ["job.ids": "\(leftovers.map(\.job.id))", "jobs.returned": "\(returned)"])
    modify { $0.abandonHandedBack() }
  }

  /// The leases to extend in the next heartbeat.
  var leasesToExtend: [JobLease] { jobs.withLock { $0.leasesToExtend } }

  /// A heartbeat extended `extended` of the `sent` leases: the others are lost, their work abandoned.
  func heartbeatAnswered(sent: [JobLease], extended: Set<Int64>) {
    modify { $0.heartbeatAnswered(sent: sent, extended: extended, now: .now) }
  }

  // MARK: - What a job's work tells the runner (through its JobLife, one event each)

  func entered(_ phase: JobPhase, _ lease: JobLease) {
    jobs.withLock { $0.entered(phase, lease, now: .now) }
  }

  func steppedAside(_ phase: JobPhase, _ lease: JobLease) {
    modify { $0.steppedAside(phase, lease, now: .now) }
  }

  func storageAnswered(refusal: JobError?) {
    jobs.withLock { $0.storageAnswered(refusal: refusal, now: .now) }
  }

  func joinRender(_ lease: JobLease) -> Jobs.RenderRole? {
    jobs.withLock { $0.joiningRender(lease) }
  }

  func renders(_ key: String, _ lease: JobLease) {
    jobs.withLock { $0.renders(key, lease) }
  }

  /// Returns once no other job here renders `key`, or after the patience. True when it waited.
  func awaitOthersRendering(_ key: String, _ lease: JobLease) async -> Bool {
    // Set before the event, so that an end of the wait decided right after it finds the wait.
    let wait = OneShot<Void>()
    jobs.withLock { $0.work(of: lease) }?.reuseWait.withLock { $0 = wait }
    let (until, actions) = jobs.withLock { $0.lookingForReuse(key, lease, now: .now) }
    perform(actions)
    guard let until else { return false }
    let timer = Task {
      try? await Task.sleep(until: until)
      wait.resolve(())
    }
    await withTaskCancellationHandler {
      await wait.value
    } onCancel: {
      wait.resolve(())
    }
    timer.cancel()
    jobs.withLock { $0.reuseWaitEnded(lease) }
    return true
  }
}

extension Logger {
  func with(_ metadata: Logger.Metadata) -> Logger {
    var copy = self
    for (key, value) in metadata { copy[metadataKey: key] = value }
    return copy
  }
}
