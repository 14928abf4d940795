import Admission
import Blocking
import CoreMetrics
import Fetch
import Foundation
import Hashing
import Imaging
public import Logging
public import Prometheus
public import Queue
import ServiceLifecycle
import Storage
import Synchronization
public import ThumbCore
import Transport

/// Turns one leased job into stored variants, or a classified error. The worker's real handler is
/// JobProcessor; benchmarks plug in handlers that do nothing, to measure the queue alone.
public protocol JobHandler: Sendable {
  /// The job's work once it has a slot. `life` takes what the work reports about itself (its phase, a
  /// wait that leaves its core to another job).
  func process(_ job: LeasedJob, _ life: JobLife) async throws(JobError) -> JobResult
  /// A job waits for a slot: its original may download meanwhile.
  func prefetch(_ url: String)
  /// The job a prefetch was for ended without fetching it.
  func forgetPrefetch(_ url: String) async
}

extension JobHandler {
  public func prefetch(_ url: String) {}
  public func forgetPrefetch(_ url: String) async {}
}

extension JobProcessor: JobHandler {}

/// Kept for callers of the first version: the counts a worker run ends with.
public typealias WorkerTotals = WorkerCounters

/// `thumbd worker`, assembled in one place from services run in a `ServiceGroup`
/// (docs/architecture.md, "The worker"). Listed in start order; a stop runs through them in reverse:
///
/// 1. the curl transfer thread (stops last, when no job can start a download);
/// 2. the HTTP endpoint: `/healthz`, `/readyz`, `/metrics` (answers while the worker hands jobs back);
/// 3. the LISTEN thread, which wakes the producer when jobs are enqueued;
/// 4. the keeper: reaches the database at start (waiting as long as it takes), then heartbeats,
///    rescue, registry, retention and queue sampling; heartbeats go on until the jobs are handed back;
///    then the collector, which deletes the storage objects nothing live names (on the keeper's
///    connection);
/// 5. the completer, which writes outcomes in batches;
/// 6. the producer, which leases and starts jobs (stops first: no new leases, grace, hand-back).
///
/// With a webhook URL, two more before the keeper: a LISTEN on thumbs_events, and the webhook sender.
///
/// Database connections: four, whatever the concurrency (lease, outcomes, keeper, LISTEN); six with
/// webhooks.
public final class Worker: Sendable {
  public let config: WorkerConfig
  public let shutdown: ShutdownSignal
  /// What `/metrics` serves.
  public let registry: PrometheusCollectorRegistry
  private let logger: Logger
  private let handler: (any JobHandler)?
  private let metrics: WorkerMetrics
  private let memory: AdmissionGate
  /// Whether the process's plane buffers are kept for the next render under this worker's budget
  /// (PlaneRecycler): for the one worker of a `thumbd worker` process, not for workers in a test's.
  private let recyclesPlanes: Bool

  /// `handler` nil: the real pipeline (fetch, render, store) built from `config`.
  public init(
    config: WorkerConfig, shutdown: ShutdownSignal = ShutdownSignal(), logger: Logger,
    handler: (any JobHandler)? = nil, registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(),
    recyclesPlanes: Bool = false
  ) {
    self.recyclesPlanes = recyclesPlanes
    self.config = config
    self.shutdown = shutdown
    self.logger = logger
    self.handler = handler
    self.registry = registry
    var factory = PrometheusMetricsFactory(registry: registry)
    factory.durationHistogramBuckets["thumbd_stage_seconds"] = WorkerMetrics.stageBuckets
    self.metrics = WorkerMetrics(factory: factory)
    // Up to four smaller decodes may start ahead of one that waits for memory (ByteAdmission).
    self.memory = AdmissionGate(capacity: config.memoryBudget, maxOvertakes: 4)
  }

  /// Runs until a stop is requested through `shutdown` (then finishes or hands back its jobs), or in drain
  /// mode until no job is due and none runs here. A request made before `run` is called stops the worker
  /// as soon as it has started. Throws only for what a restart would not cure: a storage URL it cannot
  /// open, an HTTP address it cannot bind. A database that is away is waited for. A stop that overruns
  /// the shutdown grace by `StopWatchdog.defaultMargin` ends the process (exit 70), naming what it awaited.
  public func run() async throws -> WorkerCounters {
    // What each service does, as the stop watchdog reports it; disarmed last of all, once every
    // connection is closed and the pool told to stop.
    let activity = ServiceActivity()
    let watchdog = StopWatchdog(grace: .seconds(config.shutdownGrace), activity: activity, logger: logger)
    defer { watchdog.disarm() }
    let pool = BlockingPool(threads: config.concurrency * 2 + 3, name: "thumbd-pool")
    defer { pool.shutdown() }
    let readiness = Readiness(livenessWindow: .seconds(60 + config.leaseSeconds), logger: logger)
    // One generation and one host order for all of the worker's connections (DatabaseConnections).
    let connections = DatabaseConnections { change in
      switch change {
      case .lost(let reason): readiness.databaseFailed(reason: reason)
      case .back: readiness.databaseAnswered()
      }
    }
    let connect = { (genericPlans: Bool) in
      JobQueue(
        client: PostgresClient(
          connectingLaterTo: self.config.databaseURL, pool: pool,
          preparesStatements: self.config.preparedStatements, genericPlans: genericPlans,
          liveness: self.config.databaseLiveness, group: connections),
        publicURLBase: self.config.publicURLBase)
    }
    // The lease and the outcomes run their generic plans (SQL/session_settings.sql).
    let (leaser, writer, keeperQueue) = (connect(true), connect(true), connect(false))
    defer { [leaser, writer, keeperQueue].forEach { $0.client.close() } }
    let multi = CurlMulti()
    // Registered before the originals cache: the budget drops kept plane buffers first when short.
    if recyclesPlanes { installPlaneRecycler() }
    defer { if recyclesPlanes { PlaneRecycler.install(nil) } }
    let originals = makeOriginalSource(pool: pool, multi: multi)
    try originals.fetcher.spool?.prepare()
    // The storage is opened only for the real pipeline (benchmarks' handlers store nothing).
    let store =
      try self.handler == nil ? StorageURL.open(config.storageSettings, pool: pool, multi: multi) : nil
    let handler =
      self.handler
      ?? makeProcessor(
        originals: originals, pool: pool, store: store!,
        reuse: RenderReuse { key in (try? await writer.findRendered(renderKey: key)) ?? nil },
        log: originalsLog(writer: writer, pool: pool))
    let completer = Completer(queue: writer, logger: logger, activity: activity.reporter(for: "completer")) {
      [metrics] in metrics.outcomeBatch()
    }
    let runner = JobRunner(
      settings: config.heldJobs(), handler: handler, completer: completer, metrics: metrics, logger: logger)
    metrics.budget(config.memoryBudget)
    let record = WorkerRecord(
      id: config.workerID, host: ProcessInfo.processInfo.hostName, pid: Int(getpid()),
      version: ThumbdVersion.current,
      concurrency: config.concurrency, memoryBudget: config.memoryBudget, leaseSeconds: config.leaseSeconds)
    // Only a few workers of a fleet listen (the keeper's registry says which), over the listening URL
    // when there is one: a transaction pool loses LISTEN. A listening URL of its own is not one of the
    // connections to the main URL, whose breaking tells the others.
    let listenGroup = config.listenDatabaseURL == nil ? connections : nil
    // It listens from the start, as FleetRole counts every worker a listener until the registry says
    // otherwise: a lone worker hears its first upload as soon as it leases.
    let listener = NotificationListener(
      conninfo: config.listenURL, liveness: config.databaseLiveness, group: listenGroup, watching: true)

    let context = ServiceContext(
      runner: runner, readiness: readiness, shutdown: shutdown, metrics: metrics, config: config,
      logger: logger)
    var services = ServiceList(activity: activity, watchdog: watchdog)
    func add(_ name: String, _ make: (ServiceActivity.Reporter) -> any Service) { services.add(name, make) }
    add("transfers") { TransferThreadService(multi: multi, activity: $0) }
    if let address = config.httpAddress {
      readiness.expectEndpoint()
      add("http") { activity in
        activity.awaiting("its turn to stop (serving probes and metrics)")
        return HTTPEndpoint.make(
          address: address, readiness: readiness, registry: registry,
          beforeScrape: { [metrics, memory] in
            metrics.live(memoryInUse: memory.inUse, jobsRunning: runner.held)
          }, heldJobs: { runner.snapshot }, logger: logger)
      }
    }
    if let store {
      readiness.expectStorageCheck()
      add("storage") {
        StorageCheck(
          store: store, sources: config.s3Sources, multi: multi, readiness: readiness, logger: logger,
          activity: $0)
      }
    }
    add("listener") {
      ListenerService(
        listener: listener, wake: runner.wake, notified: runner.notified, pool: pool, activity: $0)
    }
    let webhooks = addWebhooks(
      to: &services, queue: { connect(false) }, connections: listenGroup, pool: pool, multi: multi)
    defer { webhooks?.queue.client.close() }
    let role = FleetRole(listeners: [listener] + (webhooks.map { [$0.listener] } ?? []))
    add("keeper") {
      Keeper(queue: keeperQueue, context: context, record: record, role: role, activity: $0)
    }
    if let store {
      // Collection's statements are short and few: it shares the keeper's connection.
      add("collector") { Collector(queue: keeperQueue, store: store, context: context, activity: $0) }
    }
    add("completer") { _ in completer }
    add("producer") { Producer(queue: leaser, role: role, context: context, activity: $0) }
    if !DefaultCMYKProfile.isInstalled {
      logger.warning(
        "CMYK profile missing: CMYK JPEGs without a profile of their own get a naive conversion",
        metadata: ["path": "\(DefaultCMYKProfile.path)", "fix": "apt-get install libgs-common"])
    }
    var groupConfig = ServiceGroupConfiguration(services: services.services, logger: logger)
    groupConfig.logging.keys.serviceKey = "service"
    let group = ServiceGroup(configuration: groupConfig)
    stopOnRequest(group, watchdog: watchdog, readiness: readiness)
    try await group.run()
    return report(handler: handler, originals: originals)
  }

  /// With a webhook URL: a LISTEN on thumbs_events (while the worker is one of the fleet's few
  /// listeners; the others' senders poll) and the webhook sender, on a connection of their own (returned
  /// with the listener, for closing once the group has stopped).
  private func addWebhooks(
    to services: inout ServiceList, queue connect: () -> JobQueue, connections: DatabaseConnections?,
    pool: BlockingPool, multi: CurlMulti
  ) -> (queue: JobQueue, listener: NotificationListener)? {
    guard let url = config.webhookURL, let secrets = config.webhookSecrets else { return nil }
    let queue = connect()
    let events = NotificationListener(
      conninfo: config.listenURL, channel: "thumbs_events", liveness: config.databaseLiveness,
      group: connections, watching: true)
    let wake = WakeSignal()
    services.add("event-listener") { ListenerService(listener: events, wake: wake, pool: pool, activity: $0) }
    services.add("webhooks") { [config, metrics, logger] in
      WebhookSender(
        queue: queue, url: url, secrets: secrets,
        permitsAddress: config.webhookAddressPolicy.policy(host: URLComponents(string: url)?.host),
        settings: config.webhookDelivery, poster: multi, wake: wake, metrics: metrics, logger: logger,
        activity: $0)
    }
    return (queue, events)
  }

  /// A stop request (the command turns signals into them: StopSignals) stops the group gracefully and
  /// arms the stop watchdog.
  private func stopOnRequest(_ group: ServiceGroup, watchdog: StopWatchdog, readiness: Readiness) {
    shutdown.onRequest { [logger, shutdown] in
      logger.notice("stop requested", metadata: ["reason": "\(shutdown.reason ?? "requested")"])
      watchdog.arm(because: "stop requested")
      // A producer still waiting for the start-up must not wait for a database that may never answer.
      readiness.abandoned()
      // Remembered by the group if it has not started running yet.
      Task { await group.triggerGracefulShutdown() }
    }
  }

  /// The counts the run ends with, logged.
  private func report(handler: any JobHandler, originals: OriginalSource) -> WorkerCounters {
    var result = metrics.counters
    if let processor = handler as? JobProcessor {
      (result.decodes, result.sharedDecodes) = processor.renders.decodes
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
        "renders.shared": "\(result.sharedDecodes)", "renders.reused": "\(result.reusedRenders)",
        "storage.uploads": "\(result.uploads)", "storage.already_stored": "\(result.alreadyStored)",
      ])
    return result
  }

  private func makeProcessor(
    originals: OriginalSource, pool: BlockingPool, store: any ThumbnailStore, reuse: RenderReuse,
    log: OriginalsLog
  ) -> JobProcessor {
    JobProcessor(
      originals: originals, thumbnailer: Thumbnailer(maxPixels: config.maxPixels), store: store, pool: pool,
      memory: memory, metrics: metrics, reuse: reuse, originalsLog: log)
  }

  /// Keeps freed plane buffers for the next render, up to a quarter of the budget (at most 64 MiB),
  /// counted under the budget, which drops them first when a decode or a download lacks memory.
  private func installPlaneRecycler() {
    let memory = self.memory
    let recycler = PlaneRecycler(
      capacity: min(config.memoryBudget / 4, 64 << 20), keep: { memory.takeIfRoom($0) },
      released: { memory.give($0) })
    memory.onShortfall { recycler.drop(atLeast: $0) }
    PlaneRecycler.install(recycler)
  }

  /// Downloads each URL once for all the jobs here that name it, hashing each body once on the pool.
  /// Downloads are counted against the memory budget as their bodies arrive, and the cache gives its
  /// originals back when a decode lacks memory.
  private func makeOriginalSource(pool: BlockingPool, multi: CurlMulti) -> OriginalSource {
    var fetcher = Fetcher(
      limits: config.fetch, addressPolicy: config.addressPolicy, memory: memory, multi: multi,
      sources: config.s3Sources, rangePlanner: VideoRangePlanner())
    if config.maxSpoolBytes > 0 {
      fetcher.spool = Spool(directory: config.effectiveSpoolDirectory, capacity: config.maxSpoolBytes)
    }
    var settings = config.originals
    settings.cacheBytes = config.effectiveOriginalCacheBytes
    return OriginalSource(fetcher: fetcher, settings: settings, hashingOn: pool)
  }

  /// Writes the `thumbs.originals` row after every download or revalidation (a failed write is logged,
  /// not fatal).
  private func originalsLog(writer: JobQueue, pool: BlockingPool) -> OriginalsLog {
    OriginalsLog { [logger, metrics, workerID = config.workerID] url, original, delivery in
      if delivery == .downloaded {
        metrics.downloaded(bytes: original.ranges?.bytesRead ?? original.content.count)
      }
      let record = await pool.run { OriginalRecord(url: url, original) }
      do {
        try await writer.recordOriginal(record, revalidated: delivery == .revalidated, workerID: workerID)
      } catch {
        logger.warning(
          "could not record the original", metadata: ["url": "\(SourceURL.shown(url))", "error": "\(error)"])
      }
    }
  }
}

/// The worker's services in start order, each tracked for the stop watchdog. A service that ends (the
/// producer, drained) or fails (the endpoint cannot bind) stops the others gracefully: jobs are handed
/// back, never dropped; and the stop watchdog starts counting.
private struct ServiceList {
  let activity: ServiceActivity
  let watchdog: StopWatchdog
  var services: [ServiceGroupConfiguration.ServiceConfiguration] = []

  mutating func add(_ name: String, _ make: (ServiceActivity.Reporter) -> any Service) {
    let reporter = activity.reporter(for: name)
    let tracked = TrackedService(service: make(reporter), reporter: reporter) { [watchdog] in
      watchdog.arm(because: "the \(name) service ended")
    }
    var service = ServiceGroupConfiguration.ServiceConfiguration(service: tracked, serviceName: name)
    service.successTerminationBehavior = .gracefullyShutdownGroup
    service.failureTerminationBehavior = .gracefullyShutdownGroup
    services.append(service)
  }
}
