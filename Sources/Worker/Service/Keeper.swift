import Foundation
import Logging
import Queue
import ServiceLifecycle
import ThumbCore

/// Reaches the database at start (waiting with backoff for as long as it takes), then keeps the
/// worker's leases alive, rescues expired ones, refreshes the registry, prunes, and samples the queue
/// for the gauges. What runs when comes from `KeeperSchedule`.
///
/// It stops after the producer and the completer, so leases stay extended while jobs are finished or
/// handed back; then it withdraws the worker's registry row.
struct Keeper: Service, WithServiceContext {
  let queue: JobQueue
  let context: ServiceContext
  let record: WorkerRecord

  func run() async throws {
    let wake = WakeSignal()
    let ending = OneShot<Void>()
    shutdown.notify(wake)
    await withGracefulShutdownHandler {
      guard await start(wake: wake, ending: ending) else {
        // A service may end only in its turn of the group's stop: wait for it.
        await ending.value
        return
      }
      var schedule = KeeperSchedule(
        .init(
          leaseSeconds: config.leaseSeconds, housekeepingSeconds: config.housekeepingInterval,
          sampleSeconds: config.queueSampleInterval), start: .now)
      while !ending.isResolved {
        readiness.keeperRound()
        for task in schedule.due(now: .now, stopping: shutdown.isRequested) { await perform(task) }
        let sleep = ContinuousClock.now.duration(to: schedule.nextWake(stopping: shutdown.isRequested))
        await wake.wait(timeout: sleep.inSeconds)
      }
      do {
        try await queue.withdraw(workerID: config.workerID)
      } catch {
        logger.warning("could not withdraw the worker's registry row", metadata: ["error": "\(error)"])
      }
    } onGracefulShutdown: {
      ending.resolve(())
      wake.signal()
    }
  }

  /// Announces the worker, retrying with backoff until the database answers (a worker started before
  /// its database waits for it, it never exits for it), then rescues expired leases. False when the
  /// group stopped first.
  private func start(wake: WakeSignal, ending: OneShot<Void>) async -> Bool {
    // The HTTP endpoint first: a worker that cannot serve its probes stops before it announces itself.
    while !ending.isResolved && !shutdown.isRequested && !readiness.isEndpointListening {
      await wake.wait(timeout: 0.02)
    }
    let backoff = Backoff()
    var failures = 0
    var announced = false
    while !ending.isResolved && !shutdown.isRequested {
      readiness.keeperRound()
      // The schema first: a worker newer than its database's schema would fail every job it leased.
      // `problem` says why the database, although it answers, cannot take this worker yet.
      var problem: String?
      var failure: PostgresError?
      do {
        let newest = try await readiness.observe { () throws(PostgresError) in
          try await queue.schemaVersion()
        }
        problem = SchemaRequirement.problem(newestApplied: newest)
        if problem == nil {
          try await readiness.observe { () throws(PostgresError) in
            try await queue.announce(record, counters: metrics.counters, stopping: false)
          }
          announced = true
          break
        }
      } catch {
        failure = error
        problem = SchemaRequirement.problem(error)
      }
      failures += 1
      let delay = backoff.delay(afterFailures: failures)
      var metadata: Logger.Metadata = ["try": "\(failures)", "retry.after_seconds": "\(delay.inSeconds)"]
      if let problem {
        // An operator's fix: an error line each time. The worker stays unready, checks again, and
        // starts by itself once the database is fixed.
        metadata["problem"] = "\(problem)"
        logger.error("database not ready for this worker, will retry", metadata: metadata)
      } else {
        metadata["error"] = "\(failure.map { "\($0)" } ?? "")"
        logger.warning("database unreachable, will retry", metadata: metadata)
      }
      await wake.wait(timeout: delay.inSeconds)
    }
    // Stopped during the start-up: nothing was leased; a registration just made is taken back.
    guard announced && !ending.isResolved && !shutdown.isRequested else {
      if announced { try? await queue.withdraw(workerID: config.workerID) }
      readiness.abandoned()
      return false
    }
    if failures > 0 { logger.notice("database reached", metadata: ["tries": "\(failures + 1)"]) }
    await rescue()
    readiness.started()
    logger.info(
      "worker started",
      metadata: [
        "worker.id": "\(config.workerID)", "worker.concurrency": "\(config.concurrency)",
        "worker.lease_batch": "\(config.effectiveLeaseBatch)", "worker.drain": "\(config.drain)",
      ])
    return true
  }

  private func perform(_ task: KeeperSchedule.Task) async {
    switch task {
    case .heartbeat:
      await extendLeases()
      do {
        try await readiness.observe { () throws(PostgresError) in
          try await queue.announce(record, counters: metrics.counters, stopping: shutdown.isRequested)
        }
      } catch {
        logger.warning("could not refresh the worker registry", metadata: ["error": "\(error)"])
      }
    case .rescue:
      await rescue()
    case .housekeeping:
      await housekeeping()
    case .sampleQueue:
      do {
        metrics.queue(
          try await readiness.observe { () throws(PostgresError) in try await queue.queueDepth() })
      } catch {
        logger.debug("could not sample the queue", metadata: ["error": "\(error)"])
      }
    }
  }

  private func rescue() async {
    if let rescued = try? await queue.rescueExpired(), !rescued.isEmpty {
      logger.notice("rescued jobs with expired leases", metadata: ["job.ids": "\(rescued)"])
    }
  }

  private func extendLeases() async {
    let leases = runner.book.withLock { $0.leasesToExtend() }
    if leases.isEmpty { return }
    let extended: Set<Int64>
    do {
      extended = try await readiness.observe { () throws(PostgresError) in
        try await queue.heartbeat(leases, leaseSeconds: config.leaseSeconds)
      }
    } catch {
      logger.warning("heartbeat failed; leases run on until they expire", metadata: ["error": "\(error)"])
      return
    }
    runner.leasesLost(runner.book.withLock { $0.heartbeatAnswered(sent: leases, extended: extended) })
  }

  private func housekeeping() async {
    if let expired = try? await queue.expireWorkers(), expired > 0 {
      logger.notice("expired stale worker registrations", metadata: ["workers": "\(expired)"])
    }
    guard config.retentionSeconds > 0 else { return }
    do {
      let deleted = try await queue.prune(olderThanSeconds: config.retentionSeconds)
      if deleted > 0 { logger.info("pruned finished jobs", metadata: ["jobs": "\(deleted)"]) }
      let forgotten = try await queue.pruneOriginals(olderThanSeconds: config.retentionSeconds)
      if forgotten > 0 { logger.info("pruned originals rows", metadata: ["originals": "\(forgotten)"]) }
    } catch {
      logger.warning("retention failed", metadata: ["error": "\(error)"])
    }
  }
}
