import Foundation
import Logging
import Queue
import ServiceLifecycle
import ThumbCore

/// The statements a keeper runs: the queue's (`JobQueue`), or a test's own. The retention and the
/// announcement take every parameter (a requirement has no defaults): the keeper passes the queue's.
protocol KeeperStatements: Sendable {
  func schemaVersion() async throws(PostgresError) -> String?
  @discardableResult func announce(
    _ worker: WorkerRecord, counters: WorkerCounters, stopping: Bool, watchers: Int
  ) async throws(PostgresError) -> Bool
  func withdraw(workerID: String) async throws(PostgresError)
  func heartbeat(
    _ leases: [(id: Int64, token: String)], leaseSeconds: Double
  ) async throws(PostgresError) -> Set<Int64>
  @discardableResult func rescueExpired() async throws(PostgresError) -> [Int64]
  @discardableResult func promoteDue() async throws(PostgresError) -> Int
  @discardableResult func expireWorkers() async throws(PostgresError) -> Int
  @discardableResult func prune(
    olderThanSeconds: Double, batchSize: Int, maxBatches: Int
  ) async throws(PostgresError) -> Int
  @discardableResult func pruneOriginals(
    olderThanSeconds: Double, batchSize: Int, maxBatches: Int
  ) async throws(PostgresError) -> Int
  @discardableResult func pruneEvents(
    olderThanSeconds: Double, batchSize: Int, maxBatches: Int
  ) async throws(PostgresError) -> Int
  func queueDepth(maxAge: Double) async throws(PostgresError) -> QueueDepth
}

extension JobQueue: KeeperStatements {}

/// Reaches the database at start (waiting with backoff for as long as it takes), then keeps the
/// worker's leases alive, rescues expired ones, refreshes the registry, prunes, and samples the queue
/// for the gauges. What runs when comes from `KeeperSchedule`.
///
/// It stops after the producer and the completer, so leases stay extended while jobs are finished or
/// handed back; then it withdraws the worker's registry row.
struct Keeper: Service, WithServiceContext {
  let queue: any KeeperStatements
  let context: ServiceContext
  let record: WorkerRecord
  /// Told at each announcement whether this worker is one of the few of its fleet that listen; those
  /// also run the fleet's rounds (rescue, promotion, housekeeping).
  let role: FleetRole
  let activity: ServiceActivity.Reporter

  func run() async throws {
    let wake = WakeSignal()
    let ending = OneShot<Void>()
    shutdown.notify(wake)
    await withGracefulShutdownHandler {
      guard await start(wake: wake, ending: ending) else {
        // A service may end only in its turn of the group's stop: wait for it.
        activity.awaiting("its turn to stop (the start-up was given up)")
        await ending.value
        return
      }
      var schedule = KeeperSchedule(config.keeperSchedule, start: .now)
      while !ending.isResolved {
        readiness.keeperRound()
        for task in schedule.due(now: .now, stopping: shutdown.isRequested, forTheFleet: role.listens) {
          activity.awaiting("its \(task.rawValue) statement")
          await perform(task)
        }
        let next = schedule.nextWake(stopping: shutdown.isRequested)
        let sleep = ContinuousClock.now.duration(to: next)
        activity.awaiting(
          shutdown.isRequested
            ? "its turn to stop (heartbeating meanwhile)" : "its next round in \(sleep.inSeconds) s")
        await wake.wait(timeout: sleep.inSeconds)
      }
      activity.awaiting("the withdrawal of its registry row")
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

  /// Performs the start-up (`KeeperSchedule.StartUp`): the endpoint, the database with backoff for as
  /// long as it takes (a worker started before its database waits for it, it never exits for it), the
  /// first rescue. True once started; false when a stop came first (nothing was leased; a registration
  /// just made is taken back).
  private func start(wake: WakeSignal, ending: OneShot<Void>) async -> Bool {
    var startUp = KeeperSchedule.StartUp()
    var action = startUp.next(endpointListening: readiness.isEndpointListening, stopping: false)
    while true {
      let stopping = { ending.isResolved || shutdown.isRequested }
      switch action {
      case .waitForEndpoint(let poll):
        activity.awaiting("the HTTP endpoint to listen")
        await wake.wait(timeout: poll.inSeconds)
        action = startUp.next(endpointListening: readiness.isEndpointListening, stopping: stopping())
      case .announce:
        readiness.keeperRound()
        activity.awaiting("the database: schema check and announcement (try \(startUp.failures + 1))")
        if let problem = await announce() {
          action = startUp.announceFailed()
          logAnnounceFailure(problem, tries: startUp.failures, action: action)
        } else {
          startUp.announced()
          action = startUp.next(endpointListening: true, stopping: stopping())
        }
      case .waitToRetry(let delay):
        activity.awaiting("the next try to reach the database")
        await wake.wait(timeout: delay.inSeconds)
        action = startUp.next(endpointListening: true, stopping: stopping())
      case .rescue:
        if startUp.failures > 0 {
          logger.notice("database reached", metadata: ["tries": "\(startUp.failures + 1)"])
        }
        activity.awaiting("the first rescue of expired leases")
        await rescue()
        action = startUp.rescued(stopping: stopping())
      case .start:
        readiness.started()
        logger.info(
          "worker started",
          metadata: [
            "worker.id": "\(config.workerID)", "worker.concurrency": "\(config.concurrency)",
            "worker.lease_batch": "\(config.effectiveLeaseBatch)", "worker.drain": "\(config.drain)",
          ])
        return true
      case .abandon(let withdraw):
        if withdraw {
          activity.awaiting("the withdrawal of the registration it just made")
          try? await queue.withdraw(workerID: config.workerID)
        }
        readiness.abandoned()
        return false
      }
    }
  }

  /// One try: the schema first (a worker newer than its database's schema would fail every job it
  /// leased), then the announcement. Nil when announced; otherwise what stands in the way.
  private func announce() async -> AnnounceProblem? {
    do {
      let newest = try await readiness.observe { () throws(PostgresError) in try await queue.schemaVersion() }
      if let problem = SchemaRequirement.problem(newestApplied: newest) { return .schema(problem) }
      let watches = try await readiness.observe { () throws(PostgresError) in
        try await queue.announce(
          record, counters: metrics.counters, stopping: false, watchers: JobQueue.fleetWatchers)
      }
      // A lone worker listens from its first lease on. Workers that start together may each count the
      // others not yet announced out, and more than a few listen until their first heartbeat says.
      role.watching(watches)
      return nil
    } catch {
      if let problem = SchemaRequirement.problem(error) { return .schema(problem) }
      return .unreachable(error)
    }
  }

  private enum AnnounceProblem {
    /// The database answers but cannot take this worker yet (an operator's fix).
    case schema(String)
    case unreachable(PostgresError)
  }

  private func logAnnounceFailure(
    _ problem: AnnounceProblem, tries: Int, action: KeeperSchedule.StartUp.Action
  ) {
    guard case .waitToRetry(let delay) = action else { return }
    var metadata: Logger.Metadata = ["try": "\(tries)", "retry.after_seconds": "\(delay.inSeconds)"]
    switch problem {
    case .schema(let problem):
      // An error line each time. The worker stays unready, checks again, and starts by itself once the
      // database is fixed.
      metadata["problem"] = "\(problem)"
      logger.error("database not ready for this worker, will retry", metadata: metadata)
    case .unreachable(let error):
      metadata["error"] = "\(error)"
      logger.warning("database unreachable, will retry", metadata: metadata)
    }
  }

  private func perform(_ task: KeeperSchedule.Task) async {
    switch task {
    case .heartbeat:
      await extendLeases()
      do {
        try await readiness.observe { () throws(PostgresError) in
          let watches = try await queue.announce(
            record, counters: metrics.counters, stopping: shutdown.isRequested,
            watchers: JobQueue.fleetWatchers)
          role.watching(watches)
        }
      } catch {
        logger.warning("could not refresh the worker registry", metadata: ["error": "\(error)"])
      }
    case .rescue:
      await rescue()
    case .promoteDue:
      do {
        try await queue.promoteDue()
      } catch {
        logger.debug("could not promote due jobs", metadata: ["error": "\(error)"])
      }
    case .housekeeping:
      await housekeeping()
    case .sampleQueue:
      do {
        metrics.queue(
          try await readiness.observe { () throws(PostgresError) in
            // The fleet shares one count (SQL/queue_depth.sql): a younger one than this worker's own
            // interval is as good as its own.
            try await queue.queueDepth(maxAge: config.queueSampleInterval * 0.8)
          })
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
    let leases = runner.leasesToExtend
    if leases.isEmpty { return }
    let extended: Set<Int64>
    do {
      extended = try await readiness.observe { () throws(PostgresError) in
        try await queue.heartbeat(leases.map { ($0.id, $0.token) }, leaseSeconds: config.leaseSeconds)
      }
    } catch {
      logger.warning("heartbeat failed; leases run on until they expire", metadata: ["error": "\(error)"])
      return
    }
    runner.heartbeatAnswered(sent: leases, extended: extended)
  }

  private func housekeeping() async {
    if let expired = try? await queue.expireWorkers(), expired > 0 {
      logger.notice("expired stale worker registrations", metadata: ["workers": "\(expired)"])
    }
    do {
      if config.retentionSeconds > 0 {
        let deleted = try await queue.prune(
          olderThanSeconds: config.retentionSeconds, batchSize: JobQueue.pruneBatchSize,
          maxBatches: JobQueue.pruneMaxBatches)
        if deleted > 0 { logger.info("pruned finished jobs", metadata: ["jobs": "\(deleted)"]) }
        let forgotten = try await queue.pruneOriginals(
          olderThanSeconds: config.retentionSeconds, batchSize: JobQueue.pruneBatchSize,
          maxBatches: JobQueue.pruneMaxBatches)
        if forgotten > 0 { logger.info("pruned originals rows", metadata: ["originals": "\(forgotten)"]) }
      }
      if config.eventRetentionSeconds > 0 {
        let events = try await queue.pruneEvents(
          olderThanSeconds: config.eventRetentionSeconds, batchSize: JobQueue.pruneBatchSize,
          maxBatches: JobQueue.pruneMaxBatches)
        if events > 0 { logger.info("pruned completion events", metadata: ["events": "\(events)"]) }
      }
    } catch {
      logger.warning("retention failed", metadata: ["error": "\(error)"])
    }
  }
}
