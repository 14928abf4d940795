public import ThumbCore

/// A job this worker holds a lease on. `leaseToken` fences every write: a write whose token no longer
/// matches (lease expired and re-leased, job cancelled) changes nothing.
public struct LeasedJob: Sendable, Equatable {
  public var id: Int64
  public var sourceURL: String
  public var profileName: String
  public var profileSpec: String
  public var attempt: Int
  public var maxAttempts: Int
  public var leaseToken: String
}

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

  public init(client: PostgresClient) {
    self.client = client
  }

  /// Claims up to `limit` ready jobs: highest priority first, then oldest `run_at`. SKIP LOCKED lets many
  /// workers lease at once without waiting on each other's rows; `attempts` is counted here, at lease.
  public func lease(workerID: String, limit: Int, leaseSeconds: Double) async throws(PostgresError) -> [LeasedJob] {
    let result = try await client.query(
      """
      WITH picked AS MATERIALIZED (
        SELECT id FROM thumbs.jobs
         WHERE state = 'queued' AND run_at <= now()
         ORDER BY priority DESC, run_at, id
         LIMIT $2
         FOR UPDATE SKIP LOCKED)
      UPDATE thumbs.jobs j
         SET state = 'running', attempts = j.attempts + 1, lease_token = gen_random_uuid(),
             lease_expires_at = now() + make_interval(secs => $3::float8), leased_by = $1, started_at = now()
        FROM picked
       WHERE j.id = picked.id
      RETURNING j.id, j.source_url, j.profile, j.attempts, j.max_attempts, j.lease_token,
                (SELECT p.spec::text FROM thumbs.profiles p WHERE p.name = j.profile) AS spec
      """, [workerID, String(limit), String(leaseSeconds)])
    return result.rows.map { row in
      LeasedJob(
        id: Int64(row[0]!)!, sourceURL: row[1]!, profileName: row[2]!, profileSpec: row[6] ?? "",
        attempt: Int(row[3]!)!, maxAttempts: Int(row[4]!)!, leaseToken: row[5]!)
    }
  }

  /// Extends the lease. False when the lease is gone (expired and taken, or the job was cancelled).
  public func heartbeat(_ job: LeasedJob, leaseSeconds: Double) async throws(PostgresError) -> Bool {
    let result = try await client.query(
      """
      UPDATE thumbs.jobs SET lease_expires_at = now() + make_interval(secs => $3::float8)
       WHERE id = $1 AND lease_token = $2 AND state = 'running'
      """, [String(job.id), job.leaseToken, String(leaseSeconds)])
    return result.affectedRows == 1
  }

  /// Marks the job succeeded and records its variants in one statement, so either both happen or neither.
  /// False when the lease was lost: nothing was written and the caller must discard its results.
  public func complete(_ job: LeasedJob, variants: [VariantRecord]) async throws(PostgresError) -> Bool {
    let result = try await client.query(
      """
      WITH done AS (
        UPDATE thumbs.jobs
           SET state = 'succeeded', finished_at = now(), error_code = NULL, last_error = NULL,
               lease_token = NULL, lease_expires_at = NULL
         WHERE id = $1 AND lease_token = $2 AND state = 'running'
        RETURNING id)
      INSERT INTO thumbs.variants AS v (job_id, name, width, height, format, bytes, storage_key)
      SELECT done.id, r.name, r.width, r.height, r.format, r.bytes, r.storage_key
        FROM done, unnest($3::text[], $4::int[], $5::int[], $6::text[], $7::bigint[], $8::text[])
             AS r(name, width, height, format, bytes, storage_key)
      ON CONFLICT (job_id, name) DO UPDATE
         SET width = excluded.width, height = excluded.height, format = excluded.format,
             bytes = excluded.bytes, storage_key = excluded.storage_key, created_at = now()
      RETURNING v.job_id
      """,
      [
        String(job.id), job.leaseToken,
        PostgresArray.literal(variants.map(\.name)), PostgresArray.literal(variants.map(\.width)),
        PostgresArray.literal(variants.map(\.height)), PostgresArray.literal(variants.map(\.format)),
        PostgresArray.literal(variants.map(\.bytes)), PostgresArray.literal(variants.map(\.storageKey)),
      ])
    return result.rows.count == variants.count && !variants.isEmpty
  }

  /// Records a failed attempt: back to `queued` after `retryAfter` seconds, or `failed` for good when nil.
  /// Fenced like `complete`; false when the lease was lost.
  public func fail(_ job: LeasedJob, error: JobError, retryAfter: Double?) async throws(PostgresError) -> Bool {
    let result = try await client.query(
      """
      UPDATE thumbs.jobs
         SET state = CASE WHEN $5::float8 IS NULL THEN 'failed' ELSE 'queued' END,
             run_at = CASE WHEN $5::float8 IS NULL THEN run_at ELSE now() + make_interval(secs => $5::float8) END,
             finished_at = CASE WHEN $5::float8 IS NULL THEN now() END,
             error_code = $3, last_error = $4, lease_token = NULL, lease_expires_at = NULL
       WHERE id = $1 AND lease_token = $2 AND state = 'running'
      """,
      [String(job.id), job.leaseToken, error.code.rawValue, String(error.message.prefix(2000)), retryAfter.map { String($0) }])
    return result.affectedRows == 1
  }

  /// Returns jobs whose lease expired (their worker died or froze) to the queue, or fails them when they
  /// have used all their attempts. Safe from every worker at once: SKIP LOCKED keeps two rescuers off
  /// the same row, and the state/expiry condition is re-checked under the row lock.
  @discardableResult
  public func rescueExpired() async throws(PostgresError) -> [Int64] {
    let result = try await client.query(
      """
      UPDATE thumbs.jobs j
         SET state = CASE WHEN j.attempts >= j.max_attempts THEN 'failed' ELSE 'queued' END,
             finished_at = CASE WHEN j.attempts >= j.max_attempts THEN now() END,
             run_at = now(), error_code = 'lease_expired',
             last_error = 'lease expired while running on ' || coalesce(j.leased_by, 'an unknown worker'),
             lease_token = NULL, lease_expires_at = NULL
       WHERE j.id IN (SELECT id FROM thumbs.jobs
                       WHERE state = 'running' AND lease_expires_at < now()
                       FOR UPDATE SKIP LOCKED)
         AND j.state = 'running' AND j.lease_expires_at < now()
      RETURNING j.id
      """)
    return result.rows.compactMap { $0[0].flatMap { Int64($0) } }
  }

  /// `thumbs.enqueue`: the job's id (an existing live job's id for the same source and profile).
  public func enqueue(sourceURL: String, profile: String, priority: Int) async throws(PostgresError) -> Int64 {
    let result = try await client.query(
      "SELECT thumbs.enqueue($1, $2, $3::int)", [sourceURL, profile, String(priority)])
    return Int64(result.rows[0][0]!)!
  }
}
