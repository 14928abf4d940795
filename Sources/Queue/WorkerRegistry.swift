/// A worker's row in `thumbs.workers`.
public struct WorkerRecord: Sendable {
  public var id: String
  public var host: String
  public var pid: Int
  public var version: String
  public var concurrency: Int
  public var memoryBudget: Int
  public var leaseSeconds: Double
  /// The schemes of source URLs this worker reads. A worker that does not list `s3` is not given
  /// `s3://` jobs (a trigger skips them at lease): so during a rolling upgrade, workers of a release
  /// without them leave those jobs to the others.
  public var sourceSchemes = ["http", "https", "s3"]

  public init(
    id: String, host: String, pid: Int, version: String, concurrency: Int, memoryBudget: Int,
    leaseSeconds: Double
  ) {
    self.id = id
    self.host = host
    self.pid = pid
    self.version = version
    self.concurrency = concurrency
    self.memoryBudget = memoryBudget
    self.leaseSeconds = leaseSeconds
  }
}

/// What a worker has done since it started, published with each heartbeat round.
public struct WorkerCounters: Sendable, Equatable {
  public var succeeded = 0
  public var failed = 0
  public var retried = 0
  public var leaseLost = 0
  public var handedBack = 0
  /// Lease statements run and outcome batches written: the queue's database work, for `bench queue`.
  public var leaseStatements = 0
  public var outcomeBatches = 0
  /// Originals decoded, and how many of those decodes served more than one job (several profiles of
  /// one photo). Kept in the process, not published.
  public var decodes = 0
  public var sharedDecodes = 0
  /// Variant objects sent to the storage, and those found already there (content addressing).
  public var uploads = 0
  public var alreadyStored = 0
  /// Jobs whose variants were taken from an earlier job with the same original bytes and profile: no
  /// download of theirs was decoded.
  public var reusedRenders = 0

  public init() {}
}

/// The registry of workers and the queue's housekeeping: statements the keeper loop runs.
extension JobQueue {
  /// How many running workers of the fleet listen for new jobs (`announce`); the others poll.
  public static let fleetWatchers = 2
  /// Retention deletes this many rows per statement, and runs at most `pruneMaxBatches` statements per
  /// call (`prune`, `pruneOriginals`, `pruneEvents`).
  public static let pruneBatchSize = 1000
  public static let pruneMaxBatches = 100

  /// Registers the worker or refreshes its row. An upsert, so a worker whose row expired while it was
  /// frozen or cut off comes back once it can reach the database again.
  /// Returns whether the worker is one of the first `watchers` running workers of the fleet, which
  /// listen for new jobs (SQL/announce_worker.sql).
  @discardableResult
  public func announce(
    _ worker: WorkerRecord, counters: WorkerCounters, stopping: Bool, watchers: Int = fleetWatchers
  ) async throws(PostgresError) -> Bool {
    try await client.run(
      SQL.AnnounceWorker.self,
      .init(
        id: worker.id, host: worker.host, pid: worker.pid, version: worker.version,
        concurrency: worker.concurrency, memoryBudget: Int64(worker.memoryBudget),
        leaseSeconds: worker.leaseSeconds, state: stopping ? "stopping" : "running",
        jobsSucceeded: Int64(counters.succeeded), jobsFailed: Int64(counters.failed),
        jobsRetried: Int64(counters.retried), leasesLost: Int64(counters.leaseLost),
        sourceSchemes: worker.sourceSchemes, watchers: Int64(watchers))
    ).first?.watches ?? false
  }

  /// Removes the worker's row at a clean exit.
  public func withdraw(workerID: String) async throws(PostgresError) {
    try await client.run(SQL.WithdrawWorker.self, .init(workerID: workerID))
  }

  /// Deletes the rows of workers that stopped heartbeating long ago; returns how many.
  @discardableResult
  public func expireWorkers() async throws(PostgresError) -> Int {
    try await client.run(SQL.ExpireWorkers.self).first?.expired ?? 0
  }

  /// Deletes finished jobs older than `olderThanSeconds`, `batchSize` at a time, until fewer than a batch
  /// remain or `maxBatches` ran; returns how many were deleted.
  @discardableResult
  public func prune(
    olderThanSeconds: Double, batchSize: Int = pruneBatchSize, maxBatches: Int = pruneMaxBatches
  ) async throws(PostgresError)
    -> Int
  {
    try await deleteInBatches(maxBatches: maxBatches, batchSize: batchSize) {
      () async throws(PostgresError) in
      try await client.run(
        SQL.PruneJobs.self, .init(olderThanSeconds: olderThanSeconds, batchSize: batchSize)
      ).first?.deleted ?? 0
    }
  }

  /// Runs one pruning batch (`deleteBatch` answers how many rows it deleted) until a batch deletes less
  /// than `batchSize` or `maxBatches` ran: short transactions, few locks.
  func deleteInBatches(
    maxBatches: Int, batchSize: Int, _ deleteBatch: () async throws(PostgresError) -> Int
  ) async throws(PostgresError) -> Int {
    var total = 0
    for _ in 0..<maxBatches {
      let deleted = try await deleteBatch()
      total += deleted
      if deleted < batchSize { break }
    }
    return total
  }
}
