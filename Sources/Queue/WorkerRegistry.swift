/// A worker's row in `thumbs.workers`.
public struct WorkerRecord: Sendable {
  public var id: String
  public var host: String
  public var pid: Int
  public var version: String
  public var concurrency: Int
  public var memoryBudget: Int
  public var leaseSeconds: Double

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
  /// Registers the worker or refreshes its row. An upsert, so a worker whose row expired while it was
  /// frozen or cut off comes back once it can reach the database again.
  public func announce(
    _ worker: WorkerRecord, counters: WorkerCounters, stopping: Bool
  ) async throws(PostgresError) {
    try await client.query(
      SQL.announceWorker,
      [
        worker.id, worker.host, String(worker.pid), worker.version, String(worker.concurrency),
        String(worker.memoryBudget), String(worker.leaseSeconds), stopping ? "stopping" : "running",
        String(counters.succeeded), String(counters.failed), String(counters.retried),
        String(counters.leaseLost),
      ])
  }

  /// Removes the worker's row at a clean exit.
  public func withdraw(workerID: String) async throws(PostgresError) {
    try await client.query(SQL.withdrawWorker, [workerID])
  }

  /// Deletes the rows of workers that stopped heartbeating long ago; returns how many.
  @discardableResult
  public func expireWorkers() async throws(PostgresError) -> Int {
    let rows = try await client.query(SQL.expireWorkers).namedRows
    return try rows.first?.int("expired") ?? 0
  }

  /// Deletes finished jobs older than `olderThanSeconds`, `batchSize` at a time, until fewer than a batch
  /// remain or `maxBatches` ran; returns how many were deleted.
  @discardableResult
  public func prune(
    olderThanSeconds: Double, batchSize: Int = 1000, maxBatches: Int = 100
  ) async throws(PostgresError)
    -> Int
  {
    try await deleteInBatches(
      SQL.pruneJobs, olderThanSeconds: olderThanSeconds, batchSize: batchSize, maxBatches: maxBatches)
  }

  /// Runs a pruning statement (`$1` the age in seconds, `$2` the batch size, answering how many rows it
  /// deleted in `deleted`) until it deletes less than a batch or `maxBatches` ran: short transactions,
  /// few locks.
  func deleteInBatches(
    _ statement: SQLStatement, olderThanSeconds: Double, batchSize: Int, maxBatches: Int
  ) async throws(PostgresError) -> Int {
    var total = 0
    for _ in 0..<maxBatches {
      let result = try await client.query(statement, [String(olderThanSeconds), String(batchSize)])
      let deleted = try result.namedRows.first?.int("deleted") ?? 0
      total += deleted
      if deleted < batchSize { break }
    }
    return total
  }
}
