public import ThumbCore

/// The result row of one stored variant.
public struct VariantRecord: Sendable, Equatable {
  public var name: String
  public var width: Int
  public var height: Int
  public var format: String
  public var bytes: Int
  public var storageKey: String

  public init(name: String, width: Int, height: Int, format: String, bytes: Int, storageKey: String) {
    self.name = name
    self.width = width
    self.height = height
    self.format = format
    self.bytes = bytes
    self.storageKey = storageKey
  }
}

/// The queue's statements. Each is one round trip and each worker write is fenced on the lease.
public struct JobQueue: Sendable {
  public let client: PostgresClient
  /// Each thumbnail of a `succeeded` event gets its `url`: this (ending in a slash) followed by its
  /// storage key. nil: no `url`.
  public let publicURLBase: String?

  public init(client: PostgresClient, publicURLBase: String? = nil) {
    self.client = client
    self.publicURLBase = publicURLBase
  }

  /// Claims up to `limit` ready jobs, highest priority first, with up to `siblings` more jobs of the
  /// URLs the batch names (SQL/lease_jobs.sql). `attempts` is counted here, at lease.
  public func lease(
    workerID: String, limit: Int, leaseSeconds: Double, siblings: Int = 0
  ) async throws(PostgresError) -> [LeasedJob] {
    let rows = try await client.run(
      SQL.LeaseJobs.self,
      .init(workerID: workerID, limit: Int64(limit), leaseSeconds: leaseSeconds, siblings: Int64(siblings)),
      prepared: true)
    // Each profile's spec comes once per batch, on the first of its rows.
    var specs: [String: (text: String, version: Int64?)] = [:]
    for row in rows {
      if let spec = row.spec { specs[row.profile] = (spec, row.specVersion) }
    }
    return rows.map { row in
      let spec = specs[row.profile]
      return LeasedJob(
        id: row.id, sourceURL: row.sourceURL, profileName: row.profile, profileSpec: spec?.text ?? "",
        specVersion: spec?.version, attempt: row.attempts, maxAttempts: row.maxAttempts,
        leaseToken: row.leaseToken, owner: row.owner)
    }
  }

  /// Returns jobs whose lease expired to the queue, or fails them when they have used all their attempts
  /// (SQL/rescue_expired_jobs.sql). Safe from every worker at once; wakes idle workers when it requeued
  /// something.
  @discardableResult
  public func rescueExpired() async throws(PostgresError) -> [Int64] {
    try await client.run(SQL.RescueExpiredJobs.self, prepared: true).map(\.id)
  }

  /// Queued jobs whose run_at has come get their turn in line (SQL/promote_due_jobs.sql), up to 1,000;
  /// wakes idle workers when any did. Safe from every worker at once. Returns how many.
  @discardableResult
  public func promoteDue() async throws(PostgresError) -> Int {
    Int(try await client.run(SQL.PromoteDueJobs.self, prepared: true).first?.promoted ?? 0)
  }

  /// `thumbs.enqueue`: the job's id (the id of the job that already stands for the same photo, by its
  /// external id or else its source, and profile).
  public func enqueue(
    sourceURL: String, profile: String, priority: Int, externalID: String? = nil, owner: String? = nil
  ) async throws(PostgresError) -> Int64 {
    let rows = try await client.run(
      SQL.EnqueueJob.self,
      .init(sourceURL: sourceURL, profile: profile, priority: priority, externalID: externalID, owner: owner),
      prepared: true)
    guard let id = rows.first?.id else {
      throw PostgresError(kind: .query, message: "thumbs.enqueue returned no row")
    }
    return id
  }

  /// The newest migration applied to the database (SchemaRequirement), nil when none is.
  public func schemaVersion() async throws(PostgresError) -> String? {
    try await client.run(SQL.SchemaVersion.self, prepared: true).first?.version
  }

  /// The live part of the queue (SQL/queue_depth.sql): cheap enough to ask every few seconds, since it
  /// reads only the indexes of queued and running jobs, however many finished ones the table holds.
  /// `maxAge`: a count the fleet shares, taken by any worker less than this many seconds ago, is the
  /// answer (0: count now).
  public func queueDepth(maxAge: Double = 0) async throws(PostgresError) -> QueueDepth {
    guard let row = try await client.run(SQL.QueueDepth.self, .init(maxAge: maxAge), prepared: true).first
    else {
      throw PostgresError(kind: .query, message: "queue_depth returned no row")
    }
    var depth = QueueDepth(
      queued: Int(row.queued), ready: Int(row.ready), running: Int(row.running),
      oldestReadySeconds: row.oldestReadySeconds)
    depth.gcBacklog = Int(row.gcBacklog)
    return depth
  }
}

/// How many jobs wait and run, for metrics and readiness.
public struct QueueDepth: Sendable, Equatable {
  /// Jobs in state `queued`, due or not.
  public var queued: Int
  /// Queued jobs that are due (`run_at` has passed): what idle workers would take now.
  public var ready: Int
  public var running: Int
  /// How long the longest-waiting ready job has been due; 0 when none is.
  public var oldestReadySeconds: Double
  /// Storage objects collection has still to decide on or delete (thumbs.gc_objects).
  public var gcBacklog = 0

  public init(queued: Int, ready: Int, running: Int, oldestReadySeconds: Double) {
    self.queued = queued
    self.ready = ready
    self.running = running
    self.oldestReadySeconds = oldestReadySeconds
  }
}
