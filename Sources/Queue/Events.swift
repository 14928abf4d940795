/// Completion events (thumbs.events, migrations/0010): written by the outcome statements themselves;
/// here is what the worker does with them besides.
extension JobQueue {
  /// Deletes completion events (thumbs.events) older than `olderThanSeconds`; returns how many.
  @discardableResult
  public func pruneEvents(
    olderThanSeconds: Double, batchSize: Int = pruneBatchSize, maxBatches: Int = pruneMaxBatches
  )
    async throws(PostgresError) -> Int
  {
    try await deleteInBatches(maxBatches: maxBatches, batchSize: batchSize) {
      () async throws(PostgresError) in
      try await client.run(
        SQL.PruneEvents.self, .init(olderThanSeconds: olderThanSeconds, batchSize: batchSize)
      ).first?.deleted ?? 0
    }
  }
}
