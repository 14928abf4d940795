import Blocking
import Fetch
import Foundation
import Imaging
public import Logging
public import Queue
import Storage
import Synchronization
public import ThumbCore

/// Turns one leased job into stored variants, or a classified error. The worker's real handler is
/// JobProcessor; benchmarks plug in handlers that do nothing, to measure the queue alone.
public protocol JobHandler: Sendable {
  func process(_ job: LeasedJob) async throws(JobError) -> JobResult
  /// The job was leased and waits for a slot (JobProcessor joins its URL's shared decode here, so that
  /// jobs leased together decode together whatever the number of slots).
  func leased(_ job: LeasedJob)
  /// The job was abandoned before it got a slot: `process` will not be called.
  func dropped(_ job: LeasedJob)
}

extension JobHandler {
  public func leased(_ job: LeasedJob) {}
  public func dropped(_ job: LeasedJob) {}
}

extension JobProcessor: JobHandler {}

/// Kept for callers of the first version: the counts a worker run ends with.
public typealias WorkerTotals = WorkerCounters

/// `thumbd worker`. Three loops share the process (docs/architecture.md, "The worker"):
///  * the producer leases as many ready jobs as there are free slots, in one statement, and starts them;
///    it sleeps until a notification, a finished job, a stop request or the poll interval wakes it;
///  * every job runs in a task of its own and hands its outcome to the Completer, which batches writes;
///  * the keeper extends all held leases in one statement every third of the TTL, abandons jobs whose
///    lease was refused, refreshes this worker's registry row, rescues expired leases and prunes.
/// Database connections: four, whatever the concurrency (lease, outcomes, keeper, LISTEN).
public final class Worker: Sendable {
  public let config: WorkerConfig
  public let shutdown: ShutdownSignal
  private let logger: Logger
  private let handler: (any JobHandler)?
  private let counters = Mutex(WorkerCounters())
  private let book = Mutex(LeaseBook<Execution>())
  private let running = Atomic<Int>(0)
  /// Running jobs that gave their slot up while they wait for memory or a shared decode (SlotLease).
  private let aside = Atomic<Int>(0)
  private let producerWake = WakeSignal()
  private let keeperWake = WakeSignal()
  private let producerDone = Atomic<Bool>(false)
  private let slots: AdmissionGate
  private let memory: AdmissionGate

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

  /// `handler` nil: the real pipeline (fetch, render, store) built from `config`.
  public init(
    config: WorkerConfig, shutdown: ShutdownSignal = ShutdownSignal(), logger: Logger,
    handler: (any JobHandler)? = nil
  ) {
    self.config = config
    self.shutdown = shutdown
    self.logger = logger
    self.handler = handler
    self.slots = AdmissionGate(capacity: config.concurrency)
    // Up to four smaller decodes may start ahead of one that waits for memory (ByteAdmission).
    self.memory = AdmissionGate(capacity: config.memoryBudget, maxOvertakes: 4)
  }

  /// Runs until a stop is requested (then finishes or hands back its jobs), or in drain mode until no job
  /// is due and none runs here.
  public func run() async throws -> WorkerCounters {
    let pool = BlockingPool(threads: config.concurrency * 2 + 3, name: "thumbd-blocking")
    defer { pool.shutdown() }
    let leaser = JobQueue(client: try await PostgresClient(conninfo: config.databaseURL, pool: pool))
    let writer = JobQueue(client: try await PostgresClient(conninfo: config.databaseURL, pool: pool))
    let originals = makeOriginalSource(recordingWith: writer, pool: pool)
    memory.onShortfall { originals.evict(atLeast: $0) }
    let handler = try self.handler ?? makeProcessor(originals: originals, pool: pool)
    let keeper = JobQueue(client: try await PostgresClient(conninfo: config.databaseURL, pool: pool))
    defer { [leaser, writer, keeper].forEach { $0.client.close() } }
    let completer = Completer(queue: writer, logger: logger) { [self] in
      self.counters.withLock { $0.outcomeBatches += 1 }
    }
    let record = WorkerRecord(
      id: config.workerID, host: ProcessInfo.processInfo.hostName, pid: Int(getpid()),
      version: ThumbdVersion.current,
      concurrency: config.concurrency, memoryBudget: config.memoryBudget, leaseSeconds: config.leaseSeconds)
    try await keeper.announce(record, counters: WorkerCounters(), stopping: false)
    shutdown.notify(producerWake)
    shutdown.notify(keeperWake)
    let listener = NotificationListener(conninfo: config.databaseURL, channel: "thumbs_jobs") {
      [producerWake] in
      producerWake.signal()
    }
    listener.start()
    defer { listener.stop() }
    logger.info(
      "worker started",
      metadata: [
        "worker.id": "\(config.workerID)", "worker.concurrency": "\(config.concurrency)",
        "worker.lease_batch": "\(config.effectiveLeaseBatch)", "worker.drain": "\(config.drain)",
      ])
    if let rescued = try? await keeper.rescueExpired(), !rescued.isEmpty {
      logger.notice("rescued jobs with expired leases", metadata: ["job.ids": "\(rescued)"])
    }
    await withDiscardingTaskGroup { group in
      group.addTask { await self.keep(keeper, record: record) }
      await self.produce(leaser, completer: completer, handler: handler, group: &group)
      producerDone.store(true, ordering: .releasing)
      keeperWake.signal()
    }
    try? await keeper.withdraw(workerID: config.workerID)
    var result = counters.withLock { $0 }
    if let processor = handler as? JobProcessor {
      (result.decodes, result.sharedDecodes) = processor.renders.counts
    }
    let fetches = originals.counters
    logger.info(
      "worker stopped",
      metadata: [
        "jobs.succeeded": "\(result.succeeded)", "jobs.failed": "\(result.failed)",
        "jobs.retried": "\(result.retried)", "jobs.lease_lost": "\(result.leaseLost)",
        "jobs.handed_back": "\(result.handedBack)", "originals.downloads": "\(fetches.downloads)",
        "originals.shared_downloads": "\(fetches.sharedDownloads)",
        "originals.cache_hits": "\(fetches.cacheHits)",
        "originals.revalidations": "\(fetches.revalidations)", "renders.decodes": "\(result.decodes)",
        "renders.shared": "\(result.sharedDecodes)",
      ])
    return result
  }

  private func makeProcessor(originals: OriginalSource, pool: BlockingPool) throws -> JobProcessor {
    JobProcessor(
      originals: originals, thumbnailer: Thumbnailer(maxPixels: config.maxPixels),
      store: try StorageURL.open(config.storageURL), pool: pool, memory: memory)
  }

  /// Downloads each URL once for all the jobs here that name it, and writes its `thumbs.originals` row
  /// after every download or revalidation (hashing on the pool; a failed write is logged, not fatal).
  private func makeOriginalSource(recordingWith writer: JobQueue, pool: BlockingPool) -> OriginalSource {
    // Downloads are counted against the memory budget as their bodies arrive.
    let fetcher = Fetcher(limits: config.fetch, addressGuard: config.addressGuard, memory: memory)
    var settings = config.originals
    settings.cacheBytes = config.effectiveOriginalCacheBytes
    return OriginalSource(fetcher: fetcher, settings: settings) {
      [logger, workerID = config.workerID] url, original, delivery in
      let record = await pool.run { OriginalRecord(url: url, original) }
      do {
        try await writer.recordOriginal(record, revalidated: delivery == .revalidated, workerID: workerID)
      } catch {
        logger.warning(
          "could not record the original", metadata: ["url": "\(url.prefix(200))", "error": "\(error)"])
      }
    }
  }

  // MARK: Producer

  private func produce(
    _ leaser: JobQueue, completer: Completer, handler: any JobHandler, group: inout DiscardingTaskGroup
  ) async {
    var failures = 0
    var freeSince: ContinuousClock.Instant? = nil
    while !shutdown.isRequested {
      // A job standing aside leaves its core to another; at most one extra job per slot is leased so.
      let busy =
        running.load(ordering: .acquiring) - min(aside.load(ordering: .acquiring), config.concurrency)
      let free = config.concurrency - busy
      freeSince = free > 0 ? (freeSince ?? .now) : nil
      // Slots free up in bursts (outcomes are written in batches). Leasing for every single free slot
      // would split the work into ever smaller statements, so while jobs are running the producer waits
      // until half a batch of slots is free, or one slot has been free for 20 ms (long jobs).
      let enough = busy == 0 || free >= max(1, config.effectiveLeaseBatch / 2)
      let waitedLongEnough = freeSince.map { $0.duration(to: .now) >= .milliseconds(20) } ?? false
      if free > 0 && !enough && !waitedLongEnough {
        await producerWake.wait(timeout: 0.02)
        continue
      }
      if free > 0 {
        freeSince = nil
        let wanted = min(free, config.effectiveLeaseBatch)
        let jobs: [LeasedJob]
        do {
          jobs = try await leaser.lease(
            workerID: config.workerID, limit: wanted, leaseSeconds: config.leaseSeconds,
            siblings: config.leaseSiblings)
          failures = 0
          counters.withLock { $0.leaseStatements += 1 }
        } catch {
          failures += 1
          logger.warning(
            "lease failed, will retry", metadata: ["error": "\(error)", "failures": "\(failures)"])
          await shutdown.sleep(seconds: min(5, 0.25 * Double(failures)))
          continue
        }
        // Every job of the batch joins its URL's shared decode before any of them can start rendering.
        for job in jobs { handler.leased(job) }
        for job in jobs { start(job, handler: handler, completer: completer, group: &group) }
        if jobs.count == wanted { continue }  // there may be more ready: lease again without waiting
        if config.drain && jobs.isEmpty && running.load(ordering: .acquiring) == 0 {
          // Nothing due here. Jobs of dead workers may be waiting out their lease: rescue, then look again.
          if let rescued = try? await leaser.rescueExpired(), !rescued.isEmpty { continue }
          return
        }
      }
      await producerWake.wait(timeout: config.pollInterval)
    }
    await stopGracefully(completer)
  }

  private func start(
    _ job: LeasedJob, handler: any JobHandler, completer: Completer, group: inout DiscardingTaskGroup
  ) {
    running.add(1, ordering: .acquiringAndReleasing)
    let result = OneShot<Result<JobResult, JobError>?>()
    let work = Task { [self, slots] in
      guard await slots.acquire(1) == .granted else {  // abandoned while waiting: already resolved
        handler.dropped(job)
        return
      }
      let lease = SlotLease(slots: slots) { change in
        self.aside.add(change, ordering: .acquiringAndReleasing)
        if change > 0 { self.producerWake.signal() }
      }
      defer { lease.end() }
      let outcome = await SlotLease.$current.withValue(lease) {
        await Result { () async throws(JobError) in try await handler.process(job) }
      }
      result.resolve(outcome)
    }
    let superseded = book.withLock {
      $0.hold(id: job.id, token: job.leaseToken, payload: Execution(job: job, result: result, work: work))
    }
    superseded?.abandon()
    group.addTask {
      let outcome = await result.value
      await self.finish(job, outcome, completer: completer)
      self.running.subtract(1, ordering: .acquiringAndReleasing)
      self.producerWake.signal()
    }
  }

  /// Writes the job's outcome, unless its lease is no longer ours.
  private func finish(
    _ job: LeasedJob, _ outcome: Result<JobResult, JobError>?, completer: Completer
  ) async {
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
    case .failure(let error):
      let decision = config.retryPolicy.decide(
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
      counters.withLock { $0.succeeded += 1 }
      jobLogger.info("job succeeded", metadata: ["job.variants": "\(result.variants.count)"])
    case (true?, .failed(let error, let retryAfter)):
      counters.withLock { retryAfter == nil ? ($0.failed += 1) : ($0.retried += 1) }
      jobLogger.notice(
        retryAfter == nil ? "job failed" : "job will retry",
        metadata: [
          "error.code": "\(error.code.rawValue)", "error.message": "\(error.message)",
          "retry.after_seconds": "\(retryAfter.map { String(format: "%.1f", $0) } ?? "-")",
        ])
    case (false?, _) where endedAs == .held:
      counters.withLock { $0.leaseLost += 1 }
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

  /// After a stop request: running jobs get `shutdownGrace` seconds to finish; the rest are handed back
  /// (queued again at once, the attempt not counted) and their work abandoned.
  private func stopGracefully(_ completer: Completer) async {
    let deadline = ContinuousClock.now + .seconds(config.shutdownGrace)
    if running.load(ordering: .acquiring) > 0 {
      logger.notice(
        "stopping: waiting for running jobs",
        metadata: [
          "jobs.running": "\(running.load(ordering: .acquiring))", "grace_seconds": "\(config.shutdownGrace)",
        ])
    }
    while running.load(ordering: .acquiring) > 0 && ContinuousClock.now < deadline {
      let left = ContinuousClock.now.duration(to: deadline)
      await producerWake.wait(
        timeout: Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18)
    }
    let leftovers = book.withLock { $0.handBackAll() }
    if leftovers.isEmpty { return }
    let returned = await withTaskGroup(of: Bool.self) { group in
      for leftover in leftovers {
        group.addTask { await completer.record(leftover.payload.job, .handedBack) == true }
      }
      return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
    }
    counters.withLock { $0.handedBack += returned }
    logger.notice(
      "handed back unfinished jobs",
      metadata: ["job.ids": "\(leftovers.map(\.id))", "jobs.returned": "\(returned)"])
    leftovers.forEach { $0.payload.abandon() }
  }

  // MARK: Keeper

  private func keep(_ keeper: JobQueue, record: WorkerRecord) async {
    let interval = max(0.2, config.leaseSeconds / 3)
    var lastHousekeeping: ContinuousClock.Instant? = nil
    while !producerDone.load(ordering: .acquiring) {
      await keeperWake.wait(timeout: interval)
      if producerDone.load(ordering: .acquiring) { break }
      await extendLeases(keeper)
      do {
        try await keeper.announce(record, counters: counters.withLock { $0 }, stopping: shutdown.isRequested)
      } catch {
        logger.warning("could not refresh the worker registry", metadata: ["error": "\(error)"])
      }
      if shutdown.isRequested { continue }  // a stopping worker only heartbeats
      if let rescued = try? await keeper.rescueExpired(), !rescued.isEmpty {
        logger.notice("rescued jobs with expired leases", metadata: ["job.ids": "\(rescued)"])
      }
      if let last = lastHousekeeping, last.duration(to: .now) < .seconds(config.housekeepingInterval) {
        continue
      }
      lastHousekeeping = .now
      await housekeeping(keeper)
    }
  }

  private func extendLeases(_ keeper: JobQueue) async {
    let leases = book.withLock { $0.leasesToExtend() }
    if leases.isEmpty { return }
    let extended: Set<Int64>
    do {
      extended = try await keeper.heartbeat(leases, leaseSeconds: config.leaseSeconds)
    } catch {
      logger.warning("heartbeat failed; leases run on until they expire", metadata: ["error": "\(error)"])
      return
    }
    let lost = book.withLock { $0.heartbeatAnswered(sent: leases, extended: extended) }
    for (id, execution) in lost {
      counters.withLock { $0.leaseLost += 1 }
      logger.warning(
        "lease_lost job_id=\(id): heartbeat refused (job cancelled, or lease expired and taken); work abandoned"
      )
      execution.abandon()
    }
  }

  private func housekeeping(_ keeper: JobQueue) async {
    if let expired = try? await keeper.expireWorkers(), expired > 0 {
      logger.notice("expired stale worker registrations", metadata: ["workers": "\(expired)"])
    }
    guard config.retentionSeconds > 0 else { return }
    do {
      let deleted = try await keeper.prune(olderThanSeconds: config.retentionSeconds)
      if deleted > 0 { logger.info("pruned finished jobs", metadata: ["jobs": "\(deleted)"]) }
      let forgotten = try await keeper.pruneOriginals(olderThanSeconds: config.retentionSeconds)
      if forgotten > 0 { logger.info("pruned originals rows", metadata: ["originals": "\(forgotten)"]) }
    } catch {
      logger.warning("retention failed", metadata: ["error": "\(error)"])
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
