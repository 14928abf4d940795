public import ThumbCore

/// What a succeeded job leaves behind: its variants, and the ThumbHash of its original (a placeholder
/// apps show while a thumbnail loads; nil when the handler made none, as benchmarks' do).
public struct JobResult: Sendable, Equatable, ExpressibleByArrayLiteral {
  public var variants: [VariantRecord]
  public var thumbHash: String?

  public init(variants: [VariantRecord], thumbHash: String? = nil) {
    self.variants = variants
    self.thumbHash = thumbHash
  }

  public init(arrayLiteral variants: VariantRecord...) {
    self.init(variants: variants)
  }
}

/// What one job's attempt came to, ready to be written.
public enum JobOutcome: Sendable {
  case succeeded(JobResult)
  /// `retryAfter` nil: failed for good. Otherwise back to `queued`, due after that many seconds.
  case failed(JobError, retryAfter: Double?)
  /// Returned unfinished by a stopping worker: queued again at once, the attempt not counted.
  case handedBack
}

/// The writes a worker makes for the jobs it holds, each for many jobs in one statement.
///
/// Fencing: a row is written only while `state = 'running'` and its `lease_token` is the caller's. Each
/// statement returns the ids it wrote; a job missing from the answer had lost its lease (expired and taken
/// by another worker, or cancelled), so the caller discards its results.
///
/// Deadlocks: the rows are locked in id order (`ORDER BY id FOR UPDATE`) before they are updated, so two
/// of these statements — a worker's heartbeat and its completions, or a zombie's write and the new
/// holder's — always take their locks in the same order and never wait on each other in a cycle.
extension JobQueue {
  /// The CTEs every fenced write starts with: `input` (the caller's rows, with at least `id` and
  /// `token`) and `locked`, those of its jobs whose lease is still `token`, locked in id order. Callers
  /// add `, next AS (...)` or a final statement that refers to `locked` (and `input` for more columns).
  static func fenced(input: String) -> String {
    """
    input AS (\(input)),
          locked AS MATERIALIZED (
            SELECT j.id FROM thumbs.jobs j JOIN input i ON i.id = j.id
             WHERE j.lease_token = i.token AND j.state = 'running'
             ORDER BY j.id FOR UPDATE OF j)
    """
  }

  /// `fenced` for failures: each job's delay (NULL: for good), error code and message.
  static let failureInput = fenced(
    input: """
      SELECT * FROM unnest($1::bigint[], $2::uuid[], $3::float8[], $4::text[], $5::text[])
               AS t(id, token, retry_after, code, message)
      """)

  /// `fenced` for writes that need nothing but the ids (`$1`) and lease tokens (`$2`).
  static let lockedLeases = fenced(input: "SELECT * FROM unnest($1::bigint[], $2::uuid[]) AS t(id, token)")

  /// Extends the leases; returns the ids whose lease was extended.
  public func heartbeat(
    _ leases: [(id: Int64, token: String)], leaseSeconds: Double
  ) async throws(PostgresError)
    -> Set<Int64>
  {
    if leases.isEmpty { return [] }
    let result = try await client.prepared(
      """
      WITH \(Self.lockedLeases)
      UPDATE thumbs.jobs j SET lease_expires_at = now() + make_interval(secs => $3::float8)
        FROM locked WHERE j.id = locked.id
      RETURNING j.id
      """,
      [
        PostgresArray.literal(leases.map { Int($0.id) }), PostgresArray.literal(leases.map(\.token)),
        String(leaseSeconds),
      ])
    return Set(result.ids)
  }

  /// Writes the outcomes of many jobs: at most three statements (successes with their variant rows,
  /// failures, hand-backs), whatever the number of jobs. Returns the ids whose outcome was written.
  public func record(
    _ outcomes: [(job: LeasedJob, outcome: JobOutcome)]
  ) async throws(PostgresError) -> Set<Int64> {
    var succeeded: [(LeasedJob, JobResult)] = []
    var failed: [(LeasedJob, JobError, Double?)] = []
    var handedBack: [LeasedJob] = []
    for (job, outcome) in outcomes {
      switch outcome {
      case .succeeded(let result): succeeded.append((job, result))
      case .failed(let error, let retryAfter): failed.append((job, error, retryAfter))
      case .handedBack: handedBack.append(job)
      }
    }
    var written = Set<Int64>()
    if !succeeded.isEmpty { written.formUnion(try await recordSuccesses(succeeded)) }
    if !failed.isEmpty { written.formUnion(try await recordFailures(failed)) }
    if !handedBack.isEmpty { written.formUnion(try await handBack(handedBack)) }
    return written
  }

  /// Marks the jobs succeeded (with their ThumbHash) and inserts their variant rows in one statement:
  /// for each job both happen or neither does.
  private func recordSuccesses(
    _ batch: [(LeasedJob, JobResult)]
  ) async throws(PostgresError) -> Set<Int64> {
    let rows = batch.flatMap { job, result in result.variants.map { (job.id, $0) } }
    let result = try await client.prepared(
      """
      WITH \(Self.fenced(input: "SELECT * FROM unnest($1::bigint[], $2::uuid[], $10::text[]) AS t(id, token, thumbhash)")),
      done AS (
        UPDATE thumbs.jobs j
           SET state = 'succeeded', finished_at = now(), error_code = NULL, last_error = NULL,
               lease_token = NULL, lease_expires_at = NULL, thumbhash = i.thumbhash
          FROM locked, input i WHERE j.id = locked.id AND i.id = j.id
        RETURNING j.id),
      stored AS (
        INSERT INTO thumbs.variants AS v (job_id, name, width, height, format, bytes, storage_key)
        SELECT r.job_id, r.name, r.width, r.height, r.format, r.bytes, r.storage_key
          FROM unnest($3::bigint[], $4::text[], $5::int[], $6::int[], $7::text[], $8::bigint[], $9::text[])
               AS r(job_id, name, width, height, format, bytes, storage_key)
          JOIN done ON done.id = r.job_id
        ON CONFLICT (job_id, name) DO UPDATE
           SET width = excluded.width, height = excluded.height, format = excluded.format,
               bytes = excluded.bytes, storage_key = excluded.storage_key, created_at = now()
        RETURNING v.job_id)
      SELECT id FROM done
      """,
      [
        PostgresArray.literal(batch.map { Int($0.0.id) }),
        PostgresArray.literal(batch.map { $0.0.leaseToken }),
        PostgresArray.literal(rows.map { Int($0.0) }), PostgresArray.literal(rows.map(\.1.name)),
        PostgresArray.literal(rows.map(\.1.width)), PostgresArray.literal(rows.map(\.1.height)),
        PostgresArray.literal(rows.map(\.1.format)), PostgresArray.literal(rows.map(\.1.bytes)),
        PostgresArray.literal(rows.map(\.1.storageKey)), PostgresArray.literal(batch.map { $0.1.thumbHash }),
      ])
    return Set(result.ids)
  }

  /// Failed attempts: back to `queued` after the job's own delay, or `failed` for good; either way the
  /// attempt is added to the job's attempt log.
  private func recordFailures(
    _ batch: [(LeasedJob, JobError, Double?)]
  ) async throws(PostgresError) -> Set<Int64> {
    let result = try await client.prepared(
      """
      WITH \(Self.failureInput)
      UPDATE thumbs.jobs j
         SET state = CASE WHEN i.retry_after IS NULL THEN 'failed' ELSE 'queued' END,
             run_at = CASE WHEN i.retry_after IS NULL THEN j.run_at
                           ELSE now() + make_interval(secs => i.retry_after) END,
             finished_at = CASE WHEN i.retry_after IS NULL THEN now() END,
             error_code = i.code, last_error = i.message, lease_token = NULL, lease_expires_at = NULL,
             attempt_log = thumbs.append_attempt(j.attempt_log, jsonb_build_object(
               'attempt', j.attempts, 'worker', j.leased_by, 'started_at', j.started_at, 'ended_at', now(),
               'outcome', CASE WHEN i.retry_after IS NULL THEN 'failed' ELSE 'retry' END,
               'error_code', i.code, 'error', i.message))
        FROM locked, input i
       WHERE j.id = locked.id AND i.id = j.id
      RETURNING j.id
      """,
      [
        PostgresArray.literal(batch.map { Int($0.0.id) }),
        PostgresArray.literal(batch.map { $0.0.leaseToken }),
        PostgresArray.literal(batch.map { $0.2 }), PostgresArray.literal(batch.map { $0.1.code.rawValue }),
        PostgresArray.literal(batch.map { String($0.1.message.prefix(2000)) }),
      ])
    return Set(result.ids)
  }

  /// Returns unfinished jobs to the queue without counting the attempt (a clean stop is not the job's
  /// fault), logs the hand-back, and wakes idle workers to take them.
  private func handBack(_ jobs: [LeasedJob]) async throws(PostgresError) -> Set<Int64> {
    let result = try await client.prepared(
      """
      WITH \(Self.lockedLeases),
      returned AS (
        UPDATE thumbs.jobs j
           SET state = 'queued', attempts = greatest(j.attempts - 1, 0), run_at = now(), started_at = NULL,
               lease_token = NULL, lease_expires_at = NULL,
               attempt_log = thumbs.append_attempt(j.attempt_log, jsonb_build_object(
                 'attempt', j.attempts, 'worker', j.leased_by, 'started_at', j.started_at, 'ended_at', now(),
                 'outcome', 'handed_back', 'error', 'the worker stopped before the job finished'))
          FROM locked WHERE j.id = locked.id
        RETURNING j.id)
      SELECT id, \(Self.notifyWorkers) FROM returned
      """,
      [PostgresArray.literal(jobs.map { Int($0.id) }), PostgresArray.literal(jobs.map(\.leaseToken))])
    return Set(result.ids)
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
