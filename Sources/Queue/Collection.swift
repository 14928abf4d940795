/// Collection's statements (migrations/0013): the two phases of deleting storage objects that nothing
/// live names, each a short transaction of its own, in the order one pass runs them.
extension JobQueue {
  /// Candidates past their grace become marked (or are kept: something names them).
  public func gcMark(graceSeconds: Double, batch: Int) async throws(PostgresError) -> (marked: Int, kept: Int)
  {
    let row = try await client.run(
      SQL.GcMark.self, .init(graceSeconds: graceSeconds, batchSize: Int64(batch))
    )
    .first
    return (Int(row?.marked ?? 0), Int(row?.kept ?? 0))
  }

  /// Stamps marked objects with the time the mark is seen: jobs leased later see it at completion.
  @discardableResult
  public func gcFence() async throws(PostgresError) -> Int {
    Int(try await client.run(SQL.GcFence.self).first?.fenced ?? 0)
  }

  /// Claims marked objects whose fence every running job postdates; returns their keys, to delete.
  public func gcClaim(
    workerID: String, batch: Int, claimSeconds: Double
  ) async throws(PostgresError) -> [String] {
    try await client.run(
      SQL.GcClaim.self, .init(worker: workerID, batchSize: Int64(batch), claimSeconds: claimSeconds)
    ).map(\.storageKey)
  }

  /// Marked objects no collector holds (waiting for their fence, or for a claim that ran out).
  public func gcWaiting() async throws(PostgresError) -> Int {
    Int(try await client.run(SQL.GcWaiting.self).first?.waiting ?? 0)
  }

  /// The objects are gone from storage.
  @discardableResult
  public func gcDeleted(_ keys: [String]) async throws(PostgresError) -> Int {
    if keys.isEmpty { return 0 }
    return Int(try await client.run(SQL.GcDeleted.self, .init(storageKeys: keys)).first?.deleted ?? 0)
  }

  /// The storage did not delete these: claimable again after their delay.
  @discardableResult
  public func gcFailed(
    _ failures: [(key: String, error: String, retryAfter: Double)]
  ) async throws(PostgresError) -> Int {
    if failures.isEmpty { return 0 }
    return Int(
      try await client.run(
        SQL.GcFailed.self,
        .init(
          storageKeys: failures.map(\.key), errors: failures.map { String($0.error.prefix(1000)) },
          retryAfter: failures.map(\.retryAfter))
      ).first?.failed ?? 0)
  }

  /// Writes the `forgotten` events of up to `batch` erasures that are done; returns how many.
  @discardableResult
  public func gcSettle(batch: Int) async throws(PostgresError) -> Int {
    Int(try await client.run(SQL.GcSettle.self, .init(batchSize: Int64(batch))).first?.events ?? 0)
  }
}

/// A collection candidate, as `thumbd gc --dry-run` shows it.
public struct CollectionCandidate: Sendable, Equatable {
  public var storageKey: String
  /// `pending` (waiting for its grace, or due) or `deleting` (marked; being deleted).
  public var state: String
  public var reason: String?
  public var ageSeconds: Double
  /// Something live names it now: collection would keep it.
  public var named: Bool
  public var attempts: Int
  public var lastError: String?
}

extension JobQueue {
  public func gcCandidates(limit: Int) async throws(PostgresError) -> [CollectionCandidate] {
    try await client.run(SQL.GcCandidates.self, .init(limit: Int64(limit))).map {
      CollectionCandidate(
        storageKey: $0.storageKey, state: $0.state, reason: $0.reason, ageSeconds: $0.ageSeconds,
        named: $0.named, attempts: $0.attempts, lastError: $0.lastError)
    }
  }

  /// Of `keys`, those nothing names and that are not candidates already.
  public func gcUnnamed(_ keys: [String]) async throws(PostgresError) -> [String] {
    if keys.isEmpty { return [] }
    return try await client.run(SQL.GcUnnamed.self, .init(storageKeys: keys)).map(\.storageKey)
  }

  /// Makes orphans candidates, due at once.
  @discardableResult
  public func gcAdopt(_ keys: [String], graceSeconds: Double) async throws(PostgresError) -> Int {
    if keys.isEmpty { return 0 }
    return Int(
      try await client.run(SQL.GcAdopt.self, .init(storageKeys: keys, graceSeconds: graceSeconds)).first?
        .adopted ?? 0)
  }
}
