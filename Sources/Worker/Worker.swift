import Blocking
import Fetch
import Imaging
public import Logging
import Queue
import Storage
import Synchronization
import ThumbCore

/// Counts a worker run keeps, for the log line at exit and for tests.
public struct WorkerTotals: Sendable, Equatable {
  public var succeeded = 0
  public var failed = 0
  public var retried = 0
  public var leaseLost = 0
}

/// `thumbd worker`: `concurrency` slots, each with its own database connection, each leasing one job at a
/// time, processing it while heartbeating its lease, and writing the outcome fenced on that lease.
public final class Worker: Sendable {
  public let config: WorkerConfig
  public let shutdown: ShutdownSignal
  private let logger: Logger
  private let totals = Mutex(WorkerTotals())

  public init(config: WorkerConfig, shutdown: ShutdownSignal = ShutdownSignal(), logger: Logger) {
    self.config = config
    self.shutdown = shutdown
    self.logger = logger
  }

  /// Runs until shutdown is requested, or in drain mode until no job is due and none runs here.
  public func run() async throws -> WorkerTotals {
    let store = try StorageURL.open(config.storageURL)
    // Threads for blocking work: per slot one for its database round trips and one for fetch/decode,
    // plus one for heartbeats, so none of them waits on another.
    let pool = BlockingPool(threads: config.concurrency * 2 + 1, name: "thumbd-blocking")
    defer { pool.shutdown() }
    let processor = JobProcessor(
      fetcher: Fetcher(limits: config.fetch, addressGuard: config.addressGuard, pool: pool),
      thumbnailer: Thumbnailer(maxPixels: config.maxPixels), store: store, pool: pool)
    var queues: [JobQueue] = []
    for _ in 0..<config.concurrency {
      queues.append(JobQueue(client: try await PostgresClient(conninfo: config.databaseURL, pool: pool)))
    }
    let heartbeats = JobQueue(client: try await PostgresClient(conninfo: config.databaseURL, pool: pool))
    defer {
      queues.forEach { $0.client.close() }
      heartbeats.client.close()
    }
    logger.info(
      "worker started",
      metadata: [
        "worker.id": "\(config.workerID)", "worker.concurrency": "\(config.concurrency)",
        "worker.drain": "\(config.drain)",
      ])
    _ = try? await queues[0].rescueExpired()
    await withTaskGroup(of: Void.self) { group in
      for (index, queue) in queues.enumerated() {
        group.addTask { await self.runSlot(index, queue: queue, heartbeats: heartbeats, processor: processor) }
      }
    }
    let result = totals.withLock { $0 }
    logger.info(
      "worker stopped",
      metadata: [
        "jobs.succeeded": "\(result.succeeded)", "jobs.failed": "\(result.failed)",
        "jobs.retried": "\(result.retried)", "jobs.lease_lost": "\(result.leaseLost)",
      ])
    return result
  }

  private func runSlot(_ slot: Int, queue: JobQueue, heartbeats: JobQueue, processor: JobProcessor) async {
    var idle = 0.02
    while !shutdown.isRequested {
      let job: LeasedJob?
      do {
        job = try await queue.lease(workerID: config.workerID, limit: 1, leaseSeconds: config.leaseSeconds).first
      } catch {
        logger.warning("lease failed, will retry", metadata: ["error": "\(error)", "worker.slot": "\(slot)"])
        await shutdown.sleep(seconds: 1)
        continue
      }
      guard let job else {
        // Nothing due. Before idling (or leaving, in drain mode) return expired leases of dead workers.
        if let rescued = try? await queue.rescueExpired(), !rescued.isEmpty {
          logger.notice("rescued jobs with expired leases", metadata: ["job.ids": "\(rescued)"])
          continue
        }
        if config.drain { return }
        await shutdown.sleep(seconds: idle)
        idle = min(idle * 2, config.maxPollInterval)
        continue
      }
      idle = 0.02
      await handle(job, queue: queue, heartbeats: heartbeats, processor: processor)
    }
  }

  private func handle(_ job: LeasedJob, queue: JobQueue, heartbeats: JobQueue, processor: JobProcessor) async {
    let jobLogger = logger.with(["job.id": "\(job.id)", "job.attempt": "\(job.attempt)"])
    let outcome = await withHeartbeat(job, queue: heartbeats) {
      await Result { () async throws(JobError) -> [VariantRecord] in try await processor.process(job) }
    }
    do {
      let kept: Bool
      switch outcome {
      case .success(let records):
        kept = try await queue.complete(job, variants: records)
        if kept {
          totals.withLock { $0.succeeded += 1 }
          jobLogger.info("job succeeded", metadata: ["job.variants": "\(records.count)"])
        }
      case .failure(let error):
        let decision = config.retryPolicy.decide(
          code: error.code, attempt: job.attempt, maxAttempts: job.maxAttempts, unit: Double.random(in: 0..<1))
        let retryAfter: Double?
        if case .retry(let seconds) = decision { retryAfter = seconds } else { retryAfter = nil }
        kept = try await queue.fail(job, error: error, retryAfter: retryAfter)
        if kept {
          totals.withLock { retryAfter == nil ? ($0.failed += 1) : ($0.retried += 1) }
          jobLogger.notice(
            retryAfter == nil ? "job failed" : "job will retry",
            metadata: [
              "error.code": "\(error.code.rawValue)", "error.message": "\(error.message)",
              "retry.after_seconds": "\(retryAfter.map { String(format: "%.1f", $0) } ?? "-")",
            ])
        }
      }
      if !kept {
        totals.withLock { $0.leaseLost += 1 }
        jobLogger.warning("lease_lost job_id=\(job.id): the lease was taken or cancelled; results discarded")
      }
    } catch {
      // The outcome could not be written (database down). The lease will expire and another attempt
      // will be made: nothing is lost, at worst the work is repeated.
      jobLogger.error("could not record the job's outcome", metadata: ["error": "\(error)"])
    }
  }

  /// Runs `body` while extending the job's lease every third of its TTL.
  private func withHeartbeat<T: Sendable>(
    _ job: LeasedJob, queue: JobQueue, _ body: @escaping @Sendable () async -> T
  ) async -> T {
    await withTaskGroup(of: T?.self) { group in
      group.addTask { await body() }
      group.addTask {
        let interval = max(0.5, self.config.leaseSeconds / 3)
        while !Task.isCancelled {
          try? await Task.sleep(for: .seconds(interval))
          if Task.isCancelled { break }
          if (try? await queue.heartbeat(job, leaseSeconds: self.config.leaseSeconds)) == false {
            self.logger.warning("lease_lost job_id=\(job.id): heartbeat refused, results will be discarded")
            break
          }
        }
        return nil
      }
      var result: T? = nil
      while let next = await group.next() {
        if let next {
          result = next
          group.cancelAll()
        }
      }
      return result!
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

extension Result where Failure == JobError {
  init(_ body: () async throws(JobError) -> Success) async {
    do { self = .success(try await body()) } catch { self = .failure(error) }
  }
}
