public import ThumbCore

/// The `thumbs.originals` row of one downloaded URL.
public struct OriginalRecord: Sendable, Equatable {
  public var url: String
  public var bytes: Int
  /// Nil for an original read by ranges.
  public var sha256: String?
  public var contentType: String?
  public var etag: String?
  public var lastModified: String?
  public var format: String?
  public var size: PixelSize?
  /// An original read by ranges: what was read of it, and its index's SHA-256.
  public var bytesRead: Int?
  public var indexSHA256: String?

  public init(
    url: String, bytes: Int, sha256: String?, contentType: String?, etag: String?, lastModified: String?,
    format: String?, size: PixelSize?, bytesRead: Int? = nil, indexSHA256: String? = nil
  ) {
    self.bytesRead = bytesRead
    self.indexSHA256 = indexSHA256
    self.url = url
    self.bytes = bytes
    self.sha256 = sha256
    self.contentType = contentType
    self.etag = etag
    self.lastModified = lastModified
    self.format = format
    self.size = size
  }
}

extension JobQueue {
  /// Upserts the row after a download (`revalidated` false) or a 304 that confirmed the copy (true).
  public func recordOriginal(
    _ original: OriginalRecord, revalidated: Bool, workerID: String
  ) async throws(PostgresError) {
    try await client.run(
      SQL.RecordOriginal.self,
      .init(
        url: original.url, bytes: Int64(original.bytes), sha256: original.sha256,
        contentType: original.contentType, etag: original.etag, lastModified: original.lastModified,
        format: original.format, width: original.size?.width, height: original.size?.height,
        fetchedBy: workerID, revalidated: revalidated, bytesRead: original.bytesRead.map(Int64.init),
        indexSha256: original.indexSHA256),
      prepared: true)
  }

  /// Deletes `thumbs.originals` rows not confirmed for `olderThanSeconds`; returns how many.
  @discardableResult
  public func pruneOriginals(
    olderThanSeconds: Double, batchSize: Int = pruneBatchSize, maxBatches: Int = pruneMaxBatches
  )
    async throws(PostgresError) -> Int
  {
    try await deleteInBatches(maxBatches: maxBatches, batchSize: batchSize) {
      () async throws(PostgresError) in
      try await client.run(
        SQL.PruneOriginals.self, .init(olderThanSeconds: olderThanSeconds, batchSize: batchSize)
      ).first?.deleted ?? 0
    }
  }
}
