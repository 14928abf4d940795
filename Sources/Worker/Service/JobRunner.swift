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
  typealias Jobs = HeldJobs<Work, JobResult>

  /// One held job's work, run in an unstructured task so that abandoning it (lease lost, hand-back) ends
  /// the job at once even while a blocking call it made is still running on a pool thread.
  final class Work: Sendable {
    let job: LeasedJob
    var lease: JobLease { job.lease }
    /// The outcome to write, or nil: abandoned, nothing to write.
    let ended = OneShot<JobOutcome<JobResult>?>()
    private let task = Mutex<(task: Task<Void, Never>?, abandoned: Bool)>((nil, false))
    /// What this job renders for the other members of its render group, when it leads it.
    let share = RenderShare()
    /// Resolved when a wait for another job's outcome (render reuse) may end.
    let reuseWait = Mutex<OneShot<Void>?>(nil)
    /// The timer that ends that wait when the patience runs out.
    let reuseTimer = Mutex<Task<Void, Never>?>(nil)

    init(_ job: LeasedJob) {
      self.job = job
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
  private let completer: any OutcomeWriter
  private let metrics: WorkerMetrics
  private let logger: Logger

  init(
    settings: Jobs.Settings, handler: any JobHandler, completer: any OutcomeWriter, metrics: WorkerMetrics,
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
  var snapshot: [HeldJob] { jobs.withLock { $0.snapshot } }

  /// Runs one event on the held jobs and performs the actions it returns.
  private func modify(_ event: (inout Jobs) -> [Jobs.Action]) {
    performAtOnce(jobs.withLock { event(&$0) })
  }

  /// `modify`, for events whose actions may wait (a write, a release of uploads, a dropped download).
  private func modify(_ event: (inout Jobs) -> [Jobs.Action]) async {
    await perform(jobs.withLock { event(&$0) })
  }

  /// Starts the jobs of one lease. Each takes a free slot or waits for one, its original downloading
  /// meanwhile; its outcome is written from a task of the producer's group, which the producer awaits
  /// before it ends.
  func start(_ leased: [LeasedJob], in group: inout DiscardingTaskGroup) {
    let works = leased.map(Work.init)
    modify { $0.leased(works.map { ($0.job, $0) }, now: .now) }
    for work in works {
      group.addTask { await self.finish(work) }
    }
  }

  /// Performs the actions in order; those that wait are awaited in turn.
  private func perform(_ actions: [Jobs.Action]) async {
    var now: [Jobs.Action] = []
    for action in actions {
      guard action.waits else {
        now.append(action)
        continue
      }
      performAtOnce(now)
      now = []
      await performWaiting(action)
    }
    performAtOnce(now)
  }

  /// An action that waits: a write, a release of uploads, a dropped download.
  private func performWaiting(_ action: Jobs.Action) async {
    switch action {
    case .discard(let result):
      // The lease went while the job worked: its success will never be written, and what it uploaded
      // is collection's to decide.
      await completer.releaseUnclaimed(result.variants.map(\.storageKey))
    case .dropPrefetch(let url):
      await handler.forgetPrefetch(url)
    case .handBack(let works):
      await handBack(works)
    default:
      performAtOnce([action])
    }
  }

  /// Performs actions that need no waiting, in order; one that does is performed in a task of its own
  /// (the events reported from synchronous code return none).
  private func performAtOnce(_ actions: [Jobs.Action]) {
    var wakeProducer = false
    for action in actions {
      switch action {
      case .start(let work, let refusedBy):
        work.begin { await self.run(work, refusedBy: refusedBy) }
      case .prefetch(let url):
        handler.prefetch(url)
      case .discard, .dropPrefetch, .handBack:
        Task { await self.performWaiting(action) }
      case .renderAs:
        break  // answered to the job that asked (joinRender)
      case .abandon(let work, let reason, _):
        if reason == .leaseLost {
          metrics.leaseLost()
          logger.warning(
            "lease_lost job_id=\(work.job.id): heartbeat refused (job cancelled, or lease expired and taken); work abandoned"
          )
        }
        work.abandon()
      case .writeOutcome(let work, let outcome):
        work.ended.resolve(outcome)
      case .awaitReuse(let work, let until):
        let timer = Task {
          try? await Task.sleep(until: until)
          if !Task.isCancelled { await self.modify { $0.reusePatienceEnded(work.lease) } }
        }
        work.reuseTimer.withLock { $0 = timer }
      case .endReuseWait(let works):
        for work in works { work.reuseWait.withLock { $0 }?.resolve(()) }
      case .wakeProducer:
        wakeProducer = true
      }
    }
    if wakeProducer { wake.signal() }
  }

  /// The job's work, once it has a slot.
  private func run(_ work: Work, refusedBy: JobError?) async {
    let life = JobLife(runner: self, lease: work.lease)
    let result: Result<JobResult, JobError>
    if let refusedBy {
      result = .failure(refusedBy)
    } else {
      result = await Result { () async throws(JobError) in try await handler.process(work.job, life) }
    }
    await modify { $0.workEnded(work.lease, result, unit: Double.random(in: 0..<1), now: .now) }
  }

  /// Writes the job's outcome once its work has ended (the write is fenced: a lease lost meanwhile
  /// makes the database refuse it), then lets the job go.
  private func finish(_ work: Work) async {
    let job = work.job
    let outcome = await work.ended.value
    var written: WriteAnswer?
    if let outcome { written = await completer.record(job, outcome) }
    let (stillHeld, actions) = jobs.withLock {
      ($0.phase(of: work.lease) == .writingOutcome, $0.released(work.lease))
    }
    await perform(actions)
    guard let outcome else { return }  // abandoned: logged where the lease was found lost
    log(job, outcome, written: written, stillHeld: stillHeld)
  }

  private func log(
    _ job: LeasedJob, _ outcome: JobOutcome<JobResult>, written: WriteAnswer?, stillHeld: Bool
  ) {
    let jobLogger = logger.with(["job.id": "\(job.id)", "job.attempt": "\(job.attempt)"])
    switch (written, outcome) {
    case (.written?, .succeeded(let result)):
      metrics.job(.succeeded)
      jobLogger.info("job succeeded", metadata: ["job.variants": "\(result.variants.count)"])
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
    await modify { $0.handBackAll(now: .now) }
  }

  private func handBack(_ leftovers: [Work]) async {
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
  }

  /// The leases to extend in the next heartbeat.
  var leasesToExtend: [JobLease] { jobs.withLock { $0.leasesToExtend } }

  /// A heartbeat extended `extended` of the `sent` leases: the others are lost, their work abandoned.
  func heartbeatAnswered(sent: [JobLease], extended: Set<Int64>) {
    modify { $0.heartbeatAnswered(sent: sent, extended: extended, now: .now) }
  }

  // MARK: - What a job's work tells the runner (through its JobLife, one event each)

  func entered(_ phase: JobPhase, _ lease: JobLease) {
    modify { $0.entered(phase, lease, now: .now) }
  }

  func steppedAside(_ phase: JobPhase, _ lease: JobLease) {
    modify { $0.steppedAside(phase, lease, now: .now) }
  }

  func storageAnswered(refusal: JobError?) {
    modify { $0.storageAnswered(refusal: refusal, now: .now) }
  }

  /// The job's role in its render group; nil when its lease is no longer held.
  func joinRender(_ lease: JobLease) -> Jobs.RenderRole? {
    let actions = jobs.withLock { $0.joiningRender(lease) }
    performAtOnce(actions)
    for case .renderAs(let work, let role) in actions where work.lease == lease { return role }
    return nil
  }

  func renders(_ key: String, _ lease: JobLease) {
    modify { $0.renders(key, lease) }
  }

  /// Returns once no other job here renders `key`, or after the patience. True when it waited.
  func awaitOthersRendering(_ key: String, _ lease: JobLease) async -> Bool {
    // Set before the event, so that an end of the wait decided right after it finds the wait.
    let wait = OneShot<Void>()
    let work = jobs.withLock { $0.work(of: lease) }
    work?.reuseWait.withLock { $0 = wait }
    let actions = jobs.withLock { $0.lookingForReuse(key, lease, now: .now) }
    let waits = actions.contains {
      if case .awaitReuse(let waiting, _) = $0 { waiting.lease == lease } else { false }
    }
    await perform(actions)
    guard waits else { return false }
    await withTaskCancellationHandler {
      await wait.value
    } onCancel: {
      wait.resolve(())
    }
    work?.reuseTimer.withLock { $0 }?.cancel()
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

extension HeldJobs.Action {
  /// Whether performing it waits (I/O): such actions are awaited in turn, the others done at once.
  fileprivate var waits: Bool {
    switch self {
    case .discard, .dropPrefetch, .handBack: true
    default: false
    }
  }
}
