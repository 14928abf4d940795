import Admission
public import Blocking
public import Fetch
import Foundation
import Hashing
public import Imaging
public import Queue
public import Storage
import Synchronization
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
  /// Where stage times go (nil: not recorded).
  let metrics: WorkerMetrics?
  /// Finds an earlier job's variants by render key (nil: every job renders).
  let reuse: RenderReuse?
  /// Records each download or revalidation this worker makes (nil: not recorded).
  let originalsLog: OriginalsLog?

  public init(
    originals: OriginalSource, thumbnailer: Thumbnailer, store: any ThumbnailStore, pool: BlockingPool
  ) {
    self.init(
      originals: originals, thumbnailer: thumbnailer, store: store, pool: pool, memory: nil, metrics: nil,
      reuse: nil, originalsLog: nil)
  }

  init(
    originals: OriginalSource, thumbnailer: Thumbnailer, store: any ThumbnailStore, pool: BlockingPool,
    memory: AdmissionGate?, metrics: WorkerMetrics?, reuse: RenderReuse?, originalsLog: OriginalsLog?
  ) {
    self.reuse = reuse
    self.originalsLog = originalsLog
    self.memory = memory
    self.metrics = metrics
    self.originals = originals
    self.thumbnailer = thumbnailer
    self.store = store
    self.pool = pool
  }

  /// Every slot is taken: the original downloads while the job waits (into the originals cache, where
  /// its `process` finds it).
  public func prefetch(_ url: String) {
    originals.prefetch(url)
  }

  /// The job the prefetch was for ended before it fetched (dropped while it waited for a slot, an invalid
  /// profile, a storage refusal).
  public func forgetPrefetch(_ url: String) async {
    // A prefetch that ended was a download all the same: recorded like any.
    if let (original, delivery) = originals.forgetPrefetch(url) {
      await originalsLog?.record(url, original, delivery)
    }
  }

  /// A job's stages: the render of its group (fetch, reuse, admit, render: `render`), then, unless it
  /// took an earlier job's variants, store.
  public func process(_ job: LeasedJob, _ life: JobLife) async throws(JobError) -> JobResult {
    let profile = try ProfileSpec.parse(job)
    // The URL's other jobs leased with this one render with it (HeldJobs decides who leads).
    let role = life.joinRender(job)
    let variants = try await renders.variants(for: job, own: profile.variants, role: role, life: life) {
      (specs, alone) throws(JobError) -> SharedRenders.Variants? in
      // Only a job alone in its group may take an earlier job's variants instead of rendering.
      try await render(job, specs, posterAt: profile.posterAt, reusing: alone ? reuse : nil, life: life)
    }
    switch variants {
    case .reused(let result):
      metrics?.reusedRender()
      return result
    case .rendered(let rendered):
      return try await stored(rendered, of: job, life: life)
    }
  }

  /// Renders `specs` from the job's original, or takes an earlier job's variants; nil when the job was
  /// abandoned while it waited for memory. An original given up for the decode first in line (a
  /// yield) waits its turn holding nothing (its whole cost, original included), then is fetched again.
  private func render(
    _ job: LeasedJob, _ specs: [VariantSpec], posterAt: Double?, reusing: RenderReuse?, life: JobLife
  ) async throws(JobError) -> SharedRenders.Variants? {
    let reusing = reusing.map { ($0, job.profileSpec) }
    while true {
      switch try await renderOnce(job.sourceURL, specs, posterAt: posterAt, reusing: reusing, life: life) {
      case .rendered(let rendered): return .rendered(rendered)
      case .reused(let result): return .reused(result)
      case .abandoned: return nil
      case .yielded(let weight):
        switch await memory?.acquire(weight, whenQueued: { life.stepAside(.awaitingMemory) }) ?? .granted {
        case .granted: memory?.release(weight)
        case .cancelled: return nil
        case .neverFits, .yield: break  // renderOnce says so, next time round
        }
      }
    }
  }

  /// Stores what was rendered and makes the job's result. The job's CPU work is done: storing waits on
  /// the storage, and then the outcome on the database. Its slot goes to the next job meanwhile, whose
  /// lease, fetch and decode then overlap this job's writes instead of following them
  /// (docs/benchmarks/scaling.md).
  private func stored(
    _ rendered: SharedRenders.Rendered, of job: LeasedJob, life: JobLife
  ) async throws(JobError) -> JobResult {
    life.stepAside(.storing)
    let storing = ContinuousClock.now
    let records = try await store(rendered.variants, life: life)
    let storeSeconds = storing.duration(to: .now).inSeconds
    metrics?.stage(.store, seconds: storeSeconds)
    var stageTimes = rendered.info.timings
    stageTimes.fetch = rendered.fetchSeconds
    stageTimes.store = storeSeconds
    return JobResult(
      variants: records, thumbHash: rendered.info.thumbHash,
      renderKey: rendered.sourceHash.map {
        RenderKey.make(source: $0, spec: job.profileSpec, storage: store.identity)
      },
      stageTimes: stageTimes, warnings: rendered.info.warnings, media: rendered.info.media)
  }

  /// Stores the variants, all at once (each is a request or two when the storage is remote), and
  /// returns their rows. The first failure is thrown, a refusal before any other.
  private func store(_ variants: [RenderedVariant], life: JobLife) async throws(JobError) -> [VariantRecord] {
    let keys = await pool.run {
      variants.map { StorageKey.contentAddressed($0.data, fileExtension: $0.format.fileExtension) }
    }
    let (store, metrics) = (self.store, self.metrics)
    let results = await withTaskGroup(of: (Int, Result<VariantRecord, JobError>).self) { group in
      for (index, variant) in variants.enumerated() {
        group.addTask {
          let result = await Result { () async throws(JobError) -> VariantRecord in
            let outcome = try await store.put(
              key: keys[index], bytes: variant.data, contentType: variant.format.contentType)
            metrics?.stored(outcome == .uploaded ? .uploaded : .alreadyStored, bytes: variant.data.count)
            return VariantRecord(
              name: variant.name, width: variant.size.width, height: variant.size.height,
              format: variant.format.rawValue, bytes: variant.data.count, storageKey: keys[index])
          }
          return (index, result)
        }
      }
      var results = [Result<VariantRecord, JobError>?](repeating: nil, count: variants.count)
      for await (index, result) in group { results[index] = result }
      return results.compactMap { $0 }
    }
    let failures = results.compactMap { result -> JobError? in
      if case .failure(let error) = result { return error }
      return nil
    }
    if let refusal = failures.first(where: { $0.code == .storageRefused }) {
      life.storageAnswered(refusal: refusal)
      throw refusal
    }
    if let failure = failures.first { throw failure }
    life.storageAnswered(refusal: nil)
    return results.compactMap { try? $0.get() }
  }

  /// How one attempt at the job's render ended.
  enum RenderAttempt {
    case rendered(SharedRenders.Rendered)
    /// An earlier job rendered the same original bytes with the same profile: its variants.
    case reused(JobResult)
    /// The job was abandoned while it waited for memory.
    case abandoned
    /// The job let its original go for the decode first in line (AdmissionGate.Outcome.yield); the
    /// weight is its whole cost.
    case yielded(Int)
  }

  /// One attempt at the render, in its stages: fetch the original at `url`; with `reusing`, look for an
  /// earlier job with the same render key (the original's SHA-256 with the job's profile spec) and take
  /// its variants when there is one; admit the decode under the memory budget; decode once and render
  /// `variants`.
  private func renderOnce(
    _ url: String, _ variants: [VariantSpec], posterAt: Double?, reusing: (RenderReuse, String)?,
    life: JobLife
  ) async throws(JobError) -> RenderAttempt {
    var (original, fetchSeconds) = try await fetch(url, posterAt: posterAt, life: life)
    // The original's bytes are already counted (its MemoryHold), for as long as `original` lives: keep
    // it alive until the render is done, and reserve only the rest of the cost.
    defer { withExtendedLifetime(original) {} }
    var sourceHash = original.identity
    if let (reuse, spec) = reusing {
      let bytes = original.content.whole ?? []
      let hash: String
      if let known = sourceHash { hash = known } else { hash = await pool.run { Digest.sha256Hex(bytes) } }
      sourceHash = hash
      if var found = await reused(
        RenderKey.make(source: hash, spec: spec, storage: store.identity), reuse, life)
      {
        found.stageTimes = StageTimes(fetch: fetchSeconds)
        return .reused(found)
      }
    }
    // A video read by ranges: its poster search asks for the keyframes of its window it does not hold,
    // which are read, and the search goes on (each round admitted anew: the original grew).
    var search: PosterSearch? = original.ranges != nil ? .start : nil
    var rounds = 0
    while true {
      let admission: Admission
      switch try await admit(original, variants, life: life) {
      case .admitted(let admitted): admission = admitted
      case .abandoned: return .abandoned
      case .yielded(let cost): return .yielded(cost)
      }
      life.enter(.rendering)
      let (thumbnailer, content, opened, economical, asking) = (
        self.thumbnailer, original.content, admission.opened, admission.economical, search
      )
      let outcome = await pool.run { () -> Result<Thumbnailer.Outcome, JobError> in
        Result { () throws(JobError) in
          let source: OpenedOriginal
          if let opened { source = opened } else { source = try thumbnailer.open(content) }
          return try thumbnailer.render(
            source, variants: variants, economical: economical, posterAt: posterAt, asking: asking)
        }
      }
      if let memory, admission.reserved { memory.release(admission.weight) }
      switch try outcome.get() {
      case .rendered(let info, let made):
        let rendered: SharedRenders.Rendered = (info, made, sourceHash, fetchSeconds)
        if let metrics {
          for stage in [Stage.decode, .resize, .encode] {
            metrics.stage(stage, seconds: rendered.info.timings[stage] ?? 0)
          }
        }
        return .rendered(rendered)
      case .wants(let ranges, let next):
        rounds += 1
        // Past the rounds a poster window can take, the keyframes not held are passed over.
        search = rounds < Self.posterRounds ? next : nil
        life.enter(.fetching)
        let fetching = ContinuousClock.now
        original = try await originals.fetcher.adding(ranges, to: original, url: url)
        let seconds = fetching.duration(to: .now).inSeconds
        metrics?.stage(.fetch, seconds: seconds)
        fetchSeconds += seconds
      }
    }
  }

  /// Rounds of keyframes read for one poster search at most (its window of 12 s holds four rounds of
  /// VideoSource.keyframesPerRead at a keyframe a second).
  static let posterRounds = 8

  /// The fetch stage: the original at `url` (downloaded, revalidated or from the cache), with the poster's
  /// keyframe a profile asks for, and the seconds it took.
  private func fetch(
    _ url: String, posterAt: Double?, life: JobLife
  ) async throws(JobError) -> (FetchedOriginal, Double) {
    life.enter(.fetching)
    let fetching = ContinuousClock.now
    var (original, delivery) = try await originals.original(for: url)
    if delivery == .downloaded || delivery == .revalidated {
      await originalsLog?.record(url, original, delivery)
    }
    // A video read by ranges holds its first keyframes: a profile's poster time may need another.
    if let posterAt {
      original = try await originals.fetcher.addingPoster(at: posterAt, to: original, url: url)
    }
    let fetchSeconds = fetching.duration(to: .now).inSeconds
    metrics?.stage(.fetch, seconds: fetchSeconds)
    return (original, fetchSeconds)
  }

  /// The reuse stage: an earlier job's variants under `key`, or nil (the job renders them itself).
  private func reused(_ key: String, _ reuse: RenderReuse, _ life: JobLife) async -> JobResult? {
    // A job here is rendering the same: its outcome, once written, is what we would find. Its slot goes
    // to another job meanwhile (the wait is short: HeldJobs.Settings.reusePatience).
    await life.awaitOthersRendering(key)
    if let found = await reuse.find(key) { return found }
    // We render it: a duplicate behind us waits for our outcome instead of rendering it too.
    life.renders(key)
    return nil
  }

  /// What the admission stage reserved for a decode.
  struct Admission {
    /// Bytes reserved beyond what the original already holds.
    var weight: Int
    /// Whether the budget holds them (false: no budget, or nothing to reserve).
    var reserved: Bool
    /// The decode keeps only the pixels the largest variant needs (the cheaper route).
    var economical: Bool
    /// The original as the admission opened it, for the render to use (nil: opened again there,
    /// after a wait for memory, during which an open decoder's copies would not be counted).
    var opened: OpenedOriginal?
  }

  enum AdmissionResult {
    case admitted(Admission)
    /// The job was abandoned while it waited for memory.
    case abandoned
    /// The job let its original go for the decode first in line; its whole cost.
    case yielded(Int)
  }

  /// The admission stage: predicts the decode's peak memory and waits for it under the budget (the job
  /// leaves its core to another job meanwhile). Over the budget even by the cheaper route:
  /// over_memory_budget.
  private func admit(
    _ original: FetchedOriginal, _ variants: [VariantSpec], life: JobLife
  ) async throws(JobError) -> AdmissionResult {
    // Opening the original takes its decoder and a copy of the file: on the pool.
    let (thumbnailer, capacity, content) = (self.thumbnailer, memory?.capacity, original.content)
    let (opened, cost, economical, media) = await pool.run {
      () -> (OpenedOriginal?, Int, Bool, MediaInfo?) in
      // One that does not open renders nothing: its render says why.
      guard let opened = try? thumbnailer.open(content) else { return (nil, 0, false, nil) }
      let probe = thumbnailer.probe(opened, variants: variants)
      let usual = probe?.estimate.total ?? 0
      // The cheaper route: a smaller decode that still has every pixel the variants need.
      if let capacity, usual > capacity,
        let cheaper = thumbnailer.probe(opened, variants: variants, economical: true)?.estimate.total,
        cheaper < usual
      {
        return (opened, cheaper, true, probe?.media)
      }
      return (opened, usual, false, probe?.media)
    }
    let held = min(cost, original.hold?.bytes ?? 0)
    let weight = cost - held
    guard let memory, cost > 0 else {
      return .admitted(Admission(weight: weight, reserved: false, economical: economical, opened: opened))
    }
    let queued = QueuedFlag()
    let outcome = await memory.acquire(
      weight, held: held,
      whenQueued: {
        queued.set()
        life.stepAside(.awaitingMemory)
      })
    switch outcome {
    case .granted:
      return .admitted(
        Admission(weight: weight, reserved: true, economical: economical, opened: queued.isSet ? nil : opened)
      )
    case .cancelled: return .abandoned
    case .yield: return .yielded(cost)
    case .neverFits:
      throw JobError(
        .overMemoryBudget,
        "decoding needs about \(ByteSize.format(cost))"
          + "\(economical ? " even at the smallest scale that serves" : ""), "
          + "more than the \(ByteSize.format(memory.capacity)) --memory-budget", media: media)
    }
  }
}

/// Whether an admission had to wait for memory.
private final class QueuedFlag: @unchecked Sendable {
  private let flag = Mutex(false)
  func set() { flag.withLock { $0 = true } }
  var isSet: Bool { flag.withLock { $0 } }
}

extension OriginalRecord {
  /// The row for `original`, downloaded from `url`: hashes the bytes and reads the header. Blocks for a
  /// few milliseconds per megabyte: call it on the pool. The row names the URL's identity, with its
  /// secrets masked: a presigned URL's signature never reaches the table.
  init(url: String, _ original: FetchedOriginal) {
    let format = original.content.format
    // Read by ranges: the file's size and what was read of it, and no hash of bytes never read (a
    // spooled file's bytes were all read: its hash, when taken as it arrived, is the file's).
    self.init(
      url: SourceURL.redacted(SourceURL.identity(url)), bytes: original.content.fileSize,
      sha256: original.ranges == nil
        ? original.sha256 ?? Digest.sha256Hex(original.content.whole ?? [])
        : original.ranges?.spooled == true ? original.sha256 : nil,
      contentType: original.contentType, etag: original.validators.etag,
      lastModified: original.validators.lastModified, format: format?.rawValue,
      size: format.flatMap { ImageProbe.pixelSize(original.content.head, format: $0) },
      bytesRead: original.ranges?.bytesRead, indexSHA256: original.ranges?.indexSHA256)
  }
}

/// Writes the `thumbs.originals` row of a download or revalidation (JobQueue.recordOriginal).
struct OriginalsLog: Sendable {
  let record: @Sendable (String, FetchedOriginal, OriginalSource.Delivery) async -> Void
}

/// Looks up an earlier job's variants by render key (JobQueue.findRendered). A failed lookup is a miss:
/// the job renders.
struct RenderReuse: Sendable {
  let find: @Sendable (String) async -> JobResult?
}

/// What decides a job's output, hashed: the original's bytes (their SHA-256), the profile's spec (as
/// PostgreSQL's jsonb prints it, which is canonical), where the objects went, and `rendererVersion`.
enum RenderKey {
  /// Bumped whenever the renderer's output for the same input and spec changes (a new resampler, other
  /// encoder settings), so that no job takes variants rendered the old way.
  // 2: CMYK JPEGs without a profile go through a press profile; animated WebPs are composed on the canvas.
  // 3: a box pre-reduction before large Lanczos steps; the cascade tolerates rounding short of 2x.
  // 4: a GIF whose shown canvas is all opaque loses its alpha (`auto` gives JPEG, not PNG); a grey PQ or
  // HLG JPEG XL is tone-mapped.
  // 5: a GIF or animated WebP frame that leaves its canvas nearly one colour is passed over (not only
  // one that leaves it exactly one colour).
  // 6: an animated WebP's first frame that covers the canvas and is nearly one colour is passed over too.
  static let rendererVersion = 6

  static func make(source: String, spec: String, storage: String) -> String {
    Digest.sha256Hex(Array("thumbd-render \(rendererVersion)\n\(source)\n\(spec)\n\(storage)".utf8))
  }
}
