import Foundation
public import ThumbCore

/// What a succeeded job leaves behind: its variants, and the ThumbHash of its original (a placeholder
/// apps show while a thumbnail loads; nil when the handler made none, as benchmarks' do).
public struct JobResult: Sendable, Equatable, ExpressibleByArrayLiteral {
  public var variants: [VariantRecord]
  public var thumbHash: String?
  /// What decided the output (original bytes, profile, storage, renderer version), hashed: a later job
  /// with the same key takes these variants instead of rendering (migrations/0005). nil: not reusable.
  public var renderKey: String?
  /// The job whose variants these are, when they were reused rather than rendered.
  public var reusedFrom: Int64?
  /// Where the job's time went (thumbs.jobs.stage_ms); nil: not measured.
  public var stageTimes: StageTimes?
  /// What the job's row and event say about the original (thumbs.jobs.warnings).
  public var warnings: [RenderWarning]
  /// What the original was when it was a video (thumbs.jobs.media); nil for photos.
  public var media: MediaInfo?

  public init(
    variants: [VariantRecord], thumbHash: String? = nil, renderKey: String? = nil, reusedFrom: Int64? = nil,
    stageTimes: StageTimes? = nil, warnings: [RenderWarning] = [], media: MediaInfo? = nil
  ) {
    self.variants = variants
    self.thumbHash = thumbHash
    self.renderKey = renderKey
    self.reusedFrom = reusedFrom
    self.stageTimes = stageTimes
    self.warnings = warnings
    self.media = media
  }

  public init(arrayLiteral variants: VariantRecord...) {
    self.init(variants: variants)
  }
}

/// What the database answered to the write of one job's outcome.
public enum WriteAnswer: Sendable, Equatable {
  case written
  /// A success naming an object that collection is deleting: the job was queued again shortly instead,
  /// its attempt not counted (its next attempt stores the object again).
  case refusedByCollection
  /// The lease was lost (expired and taken, cancelled, forgotten): nothing was written.
  case leaseLost
}

/// The writes a worker makes for the jobs it holds, each for many jobs in one statement.
///
/// Fencing: a row is written only while `state = 'running'` and its `lease_token` is the caller's. Each
/// statement returns the ids it wrote; a job missing from the answer had lost its lease (expired and taken
/// by another worker, or cancelled), so the caller discards its results. Every one of them locks its rows
/// in id order first, so two of them never deadlock (SQL/heartbeat_jobs.sql says more).
extension JobQueue {
  /// Extends the leases; returns the ids whose lease was extended.
  public func heartbeat(
    _ leases: [(id: Int64, token: String)], leaseSeconds: Double
  ) async throws(PostgresError)
    -> Set<Int64>
  {
    if leases.isEmpty { return [] }
    let rows = try await client.run(
      SQL.HeartbeatJobs.self,
      .init(ids: leases.map(\.id), tokens: leases.map(\.token), leaseSeconds: leaseSeconds), prepared: true)
    return Set(rows.map(\.id))
  }

  /// Writes the outcomes of many jobs: at most three statements (successes with their variant rows,
  /// failures, hand-backs), whatever the number of jobs. Returns the ids whose outcome was written.
  public func record(
    _ outcomes: [(job: LeasedJob, outcome: JobOutcome<JobResult>)]
  ) async throws(PostgresError) -> Set<Int64> {
    Set(try await recordOutcomes(outcomes).compactMap { $0.value == .written ? $0.key : nil })
  }

  /// `record`, with the answer for each job (by id): written, refused because collection is deleting an
  /// object it names (SQL/complete_jobs.sql: the job is queued again), or its lease lost.
  public func recordOutcomes(
    _ outcomes: [(job: LeasedJob, outcome: JobOutcome<JobResult>)]
  ) async throws(PostgresError) -> [Int64: WriteAnswer] {
    var succeeded: [(LeasedJob, JobResult)] = []
    var failed: [(LeasedJob, JobError, Double?, Bool)] = []
    var handedBack: [LeasedJob] = []
    for (job, outcome) in outcomes {
      switch outcome {
      case .succeeded(let result): succeeded.append((job, result))
      case .failed(let error, let retryAfter): failed.append((job, error, retryAfter, false))
      case .deferred(let error, let retryAfter): failed.append((job, error, retryAfter, true))
      case .handedBack: handedBack.append(job)
      }
    }
    var answers = Dictionary(outcomes.map { ($0.job.id, WriteAnswer.leaseLost) }) { first, _ in first }
    if !succeeded.isEmpty { answers.merge(try await recordSuccesses(succeeded)) { _, answer in answer } }
    if !failed.isEmpty { for id in try await recordFailures(failed) { answers[id] = .written } }
    if !handedBack.isEmpty { for id in try await handBack(handedBack) { answers[id] = .written } }
    return answers
  }

  /// Marks the jobs succeeded (with their ThumbHash) and inserts their variant rows in one statement:
  /// for each job both happen or neither does.
  private func recordSuccesses(
    _ batch: [(LeasedJob, JobResult)]
  ) async throws(PostgresError) -> [Int64: WriteAnswer] {
    let rows: [(Int64, VariantRecord)] = batch.flatMap { job, result in result.variants.map { (job.id, $0) } }
    let jobs: [LeasedJob] = batch.map(\.0)
    let results: [JobResult] = batch.map(\.1)
    let parameters = SQL.CompleteJobs.Parameters(
      ids: jobs.map(\.id), tokens: jobs.map(\.leaseToken), variantJobIDs: rows.map(\.0),
      names: rows.map(\.1.name), widths: rows.map(\.1.width), heights: rows.map(\.1.height),
      formats: rows.map(\.1.format), bytes: rows.map { Int64($0.1.bytes) },
      storageKeys: rows.map(\.1.storageKey), thumbhashes: results.map(\.thumbHash),
      renderKeys: results.map(\.renderKey), reusedFrom: results.map(\.reusedFrom),
      stageMS: results.map { $0.stageTimes?.json }, specVersions: jobs.map(\.specVersion),
      warnings: results.map { RenderWarning.json($0.warnings) }, publicURLBase: publicURLBase,
      media: results.map { $0.media?.json })
    let answer = try await client.run(SQL.CompleteJobs.self, parameters, prepared: true)
    let answers = Dictionary(answer.map { ($0.id, $0.refused ? WriteAnswer.refusedByCollection : .written) })
    {
      first, _ in first
    }
    // What the jobs not written uploaded may be named by nothing: collection decides (rare; a failure
    // here leaves orphans that `thumbd gc` finds).
    let unclaimed = batch.filter { answers[$0.0.id] != .written }.flatMap { $0.1.variants.map(\.storageKey) }
    if !unclaimed.isEmpty { _ = try? await releaseUnclaimed(unclaimed) }
    return answers
  }

  /// Objects a job uploaded whose success will not be recorded become collection candidates: they may
  /// have been stored for nothing, and collection keeps whatever something names meanwhile.
  public func releaseUnclaimed(_ storageKeys: [String]) async throws(PostgresError) -> Int {
    Int(try await client.run(SQL.GcUnclaimed.self, .init(storageKeys: storageKeys)).first?.added ?? 0)
  }

  /// Failed attempts: back to `queued` after the job's own delay, or `failed` for good; either way the
  /// attempt is added to the job's attempt log. Deferred ones get their attempt back.
  private func recordFailures(
    _ batch: [(LeasedJob, JobError, Double?, Bool)]
  ) async throws(PostgresError) -> Set<Int64> {
    let written = try await client.run(
      SQL.FailJobs.self,
      .init(
        ids: batch.map(\.0.id), tokens: batch.map(\.0.leaseToken), retryAfter: batch.map(\.2),
        codes: batch.map(\.1.code.rawValue),
        messages: batch.map { String(SourceURL.redactingSecrets(in: $0.1.message).prefix(2000)) },
        deferred: batch.map(\.3), media: batch.map { $0.1.media?.json }),
      prepared: true)
    return Set(written.map(\.id))
  }

  /// Returns unfinished jobs to the queue without counting the attempt (a clean stop is not the job's
  /// fault), logs the hand-back, and wakes idle workers to take them.
  /// Hands back the jobs leased to `workerID` that it does not hold (`held`): what a lease statement
  /// whose answer was lost may have leased after all (SQL/unheld_jobs.sql). Returns their ids.
  public func reclaimUnheld(workerID: String, held: [Int64]) async throws(PostgresError) -> [Int64] {
    let rows = try await client.run(SQL.UnheldJobs.self, .init(workerID: workerID, heldIDs: held))
    guard !rows.isEmpty else { return [] }
    let written = try await client.run(
      SQL.HandBackJobs.self, .init(ids: rows.map(\.id), tokens: rows.map(\.leaseToken)), prepared: true)
    return written.map(\.id).sorted()
  }

  private func handBack(_ jobs: [LeasedJob]) async throws(PostgresError) -> Set<Int64> {
    let written = try await client.run(
      SQL.HandBackJobs.self, .init(ids: jobs.map(\.id), tokens: jobs.map(\.leaseToken)), prepared: true)
    return Set(written.map(\.id))
  }

  /// The variants of the newest succeeded job with `renderKey`, as a result for another job to record
  /// (`reusedFrom` names that job); nil when there is none.
  public func findRendered(renderKey: String) async throws(PostgresError) -> JobResult? {
    let rows = try await client.run(SQL.FindRendered.self, .init(renderKey: renderKey), prepared: true)
    var found: JobResult?
    for row in rows {
      let variant = VariantRecord(
        name: row.name, width: row.width, height: row.height, format: row.format, bytes: Int(row.bytes),
        storageKey: row.storageKey)
      if found == nil {
        found = JobResult(
          variants: [], thumbHash: row.thumbhash, renderKey: renderKey, reusedFrom: row.jobID,
          warnings: row.warnings.map(RenderWarning.list(json:)) ?? [],
          media: row.media.flatMap(MediaInfo.init(json:)))
      }
      found?.variants.append(variant)
    }
    return found
  }

  // One-job forms, for tools and tests.

  /// Extends one lease. False when it is gone (expired and taken, or the job was cancelled).
  public func heartbeat(_ job: LeasedJob, leaseSeconds: Double) async throws(PostgresError) -> Bool {
    try await heartbeat([(job.id, job.leaseToken)], leaseSeconds: leaseSeconds).contains(job.id)
  }

  /// Marks one job succeeded with its variants. False when the lease was lost and nothing was written.
  public func complete(
    _ job: LeasedJob, variants: [VariantRecord], thumbHash: String? = nil
  ) async throws(PostgresError) -> Bool {
    try await record([(job, .succeeded(JobResult(variants: variants, thumbHash: thumbHash)))]).contains(
      job.id)
  }

  /// Records one failed attempt (`retryAfter` nil: for good). False when the lease was lost.
  public func fail(_ job: LeasedJob, error: JobError, retryAfter: Double?) async throws(PostgresError) -> Bool
  {
    try await record([(job, .failed(error, retryAfter: retryAfter))]).contains(job.id)
  }
}

extension RenderWarning {
  /// The JSON array thumbs.jobs.warnings holds.
  static func json(_ warnings: [RenderWarning]) -> String {
    guard !warnings.isEmpty, let data = try? JSONEncoder().encode(warnings) else { return "[]" }
    return String(decoding: data, as: UTF8.self)
  }

  /// The warnings of a thumbs.jobs.warnings value; none when it does not read as such.
  static func list(json: String) -> [RenderWarning] {
    (try? JSONDecoder().decode([RenderWarning].self, from: Data(json.utf8))) ?? []
  }
}
