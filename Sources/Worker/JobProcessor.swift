public import Blocking
public import Fetch
import Foundation
public import Imaging
public import Queue
public import Storage
public import ThumbCore

/// Turns one leased job into stored variants: fetch, decode and render, store. All blocking work runs on
/// the pool. Throws a classified JobError; never touches the database (the Worker writes the outcome).
public struct JobProcessor: Sendable {
  public let originals: OriginalSource
  public let thumbnailer: Thumbnailer
  public let store: any ThumbnailStore
  public let pool: BlockingPool
  /// Reserves each job's predicted peak memory before it decodes (`--memory-budget`); nil: no budget.
  let memory: AdmissionGate?
  /// One decode for the jobs here that need the same original at once (several profiles of a photo).
  let renders = SharedRenders()

  public init(
    originals: OriginalSource, thumbnailer: Thumbnailer, store: any ThumbnailStore, pool: BlockingPool
  ) {
    self.init(originals: originals, thumbnailer: thumbnailer, store: store, pool: pool, memory: nil)
  }

  init(
    originals: OriginalSource, thumbnailer: Thumbnailer, store: any ThumbnailStore, pool: BlockingPool,
    memory: AdmissionGate?
  ) {
    self.memory = memory
    self.originals = originals
    self.thumbnailer = thumbnailer
    self.store = store
    self.pool = pool
  }

  public func leased(_ job: LeasedJob) {
    guard let profile = try? ProfileSpec.parse(name: job.profileName, json: Data(job.profileSpec.utf8)) else {
      return  // process() reports the invalid profile
    }
    renders.enrol(token: job.leaseToken, url: job.sourceURL, variants: profile.variants)
  }

  public func dropped(_ job: LeasedJob) {
    if let membership = renders.takeEnrolment(token: job.leaseToken) { renders.leave(membership) }
  }

  public func process(_ job: LeasedJob) async throws(JobError) -> JobResult {
    let profile: Profile
    do {
      profile = try ProfileSpec.parse(name: job.profileName, json: Data(job.profileSpec.utf8))
    } catch {
      throw JobError(.invalidProfile, error.description)
    }
    // Joined when leased (or now, for callers that process without leasing through a Worker), so that
    // the URL's other jobs leased with this one render with it.
    let membership =
      renders.takeEnrolment(token: job.leaseToken)
      ?? renders.join(url: job.sourceURL, variants: profile.variants)
    // Only the member that renders downloads: the others wait for its variants, not for the bytes.
    let (info, rendered) = try await renders.variants(for: membership) {
      (specs) throws(JobError) -> SharedRenders.Rendered? in
      let (original, _) = try await originals.original(for: job.sourceURL)
      return try await render(original.bytes, specs)
    }
    let store = self.store
    return try await pool.run { () throws(JobError) -> JobResult in
      let records = try rendered.map { (variant) throws(JobError) -> VariantRecord in
        let key = StorageKey.contentAddressed(variant.data, fileExtension: variant.format.fileExtension)
        try store.put(key: key, bytes: variant.data, contentType: variant.format.contentType)
        return VariantRecord(
          name: variant.name, width: variant.size.width, height: variant.size.height,
          format: variant.format.rawValue, bytes: variant.data.count, storageKey: key)
      }
      return JobResult(variants: records, thumbHash: info.thumbHash)
    }
  }

  /// Decodes `bytes` once and renders `variants`, under the memory budget. Nil when abandoned while
  /// waiting for memory.
  private func render(
    _ bytes: [UInt8], _ variants: [VariantSpec]
  ) async throws(JobError) -> SharedRenders.Rendered? {
    // Reading a header can take libheif or libspng and a copy of the file: on the pool.
    let (thumbnailer, capacity) = (self.thumbnailer, memory?.capacity)
    let (cost, economical) = await pool.run { () -> (Int, Bool) in
      let usual = thumbnailer.predictedPeak(of: bytes, variants: variants)?.total ?? 0
      // The cheaper route: a smaller decode that still has every pixel the variants need.
      if let capacity, usual > capacity,
        let cheaper = thumbnailer.predictedPeak(of: bytes, variants: variants, economical: true)?.total,
        cheaper < usual
      {
        return (cheaper, true)
      }
      return (usual, false)
    }
    if let memory, cost > 0 {
      switch await memory.acquire(cost) {
      case .granted: break
      case .cancelled: return nil
      case .neverFits:
        throw JobError(
          .overMemoryBudget,
          "decoding needs about \(ByteSize.format(cost))\(economical ? " even at the smallest scale that serves" : ""), "
            + "more than the \(ByteSize.format(memory.capacity)) --memory-budget leaves for decoding "
            + "(the original cache takes the rest)")
      }
    }
    defer { if let memory, cost > 0 { memory.release(cost) } }
    let route = economical
    return try await pool.run { () throws(JobError) -> SharedRenders.Rendered in
      try thumbnailer.render(bytes, variants: variants, economical: route)
    }
  }
}

extension OriginalRecord {
  /// The row for `original`, downloaded from `url`: hashes the bytes and reads the header. Blocks for a
  /// few milliseconds per megabyte: call it on the pool.
  init(url: String, _ original: FetchedOriginal) {
    let format = ImageFormat.sniff(original.bytes)
    self.init(
      url: url, bytes: original.bytes.count, sha256: StorageKey.sha256Hex(original.bytes),
      contentType: original.contentType, etag: original.validators.etag,
      lastModified: original.validators.lastModified, format: format?.rawValue,
      size: format.flatMap { ImageProbe.pixelSize(original.bytes, format: $0) })
  }
}
