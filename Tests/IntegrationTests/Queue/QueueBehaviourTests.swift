import Blocking
import Foundation
import Logging
import Queue
import TestSupport
import Testing
import ThumbCore
import Worker

/// A worker running in this process until `stop()`.
final class BackgroundWorker: Sendable {
  let shutdown = ShutdownSignal()
  let task: Task<WorkerCounters, any Error>

  init(databaseURL: String, storage: URL, configure: (inout WorkerConfig) -> Void = { _ in }) throws {
    var config = WorkerConfig(databaseURL: databaseURL, storageURL: "file://\(storage.path)")
    config.concurrency = 1
    config.addressPolicy = try AddressPolicy(allowList: "127.0.0.1")
    configure(&config)
    var logger = Logger(label: "thumbd.test")
    logger.logLevel = .warning
    let worker = Worker(config: config, shutdown: shutdown, logger: logger)
    task = Task { try await worker.run() }
  }

  func stop() async throws -> WorkerCounters {
    shutdown.request()
    return try await task.value
  }
}

@Suite(.serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)))
struct QueueBehaviourTests {
  let pool = BlockingPool(threads: 2, name: "queue-behaviour-test")

  @Test func aPermanentErrorFailsAtOnce() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    try sql(database, "SELECT thumbs.enqueue($1)", [fixture.origin.url("/status/404")])
    let totals = try await drainQueue(databaseURL: database, storage: fixture.storage)
    #expect(totals.failed == 1 && totals.retried == 0)
    #expect(
      try sql(database, "SELECT state, attempts, error_code FROM thumbs.jobs").rows[0] == [
        "failed", "1", "not_found",
      ])
    #expect(try await fixture.origin.requestCount("/status/404") == 1)
    let history = try sql(database, "SELECT attempt, outcome, error_code FROM thumbs.job_attempts").rows
    #expect(history == [["1", "failed", "not_found"]])
    #expect(
      try sql(database, "SELECT count(*) FROM thumbs.failed_jobs WHERE error_code = 'not_found'").rows[0][0]
        == "1")
  }

  @Test func aTransientErrorRetriesAfterItsBackoffAndThenSucceeds() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    // Three 503s: the whole first attempt (3 tries) fails; the second attempt gets the photo.
    try sql(database, "SELECT thumbs.enqueue($1)", [fixture.origin.url("/flaky/3/photo.jpg")])
    let policy = RetryPolicy(baseSeconds: 1.5, capSeconds: 60, jitter: 0)
    let first = try await drainQueue(databaseURL: database, storage: fixture.storage) {
      $0.retryPolicy = policy
    }
    #expect(first.retried == 1 && first.succeeded == 0)
    let waiting = try sql(
      database, "SELECT state, attempts, error_code, extract(epoch FROM run_at - now()) FROM thumbs.jobs"
    ).rows[0]
    #expect(waiting[0] == "queued" && waiting[1] == "1" && waiting[2] == "fetch_failed")
    let wait = try #require(Double(waiting[3] ?? ""))
    #expect(wait > 0.5 && wait <= 1.5, "backoff of attempt 1 is base * 2^0 = 1.5 s")

    // Not due yet: a drain leaves it alone.
    #expect(try await drainQueue(databaseURL: database, storage: fixture.storage).succeeded == 0)
    try await Task.sleep(for: .seconds(wait + 0.2))
    let second = try await drainQueue(databaseURL: database, storage: fixture.storage) {
      $0.retryPolicy = policy
    }
    #expect(second.succeeded == 1)
    #expect(try sql(database, "SELECT state, attempts FROM thumbs.jobs").rows[0] == ["succeeded", "2"])
    #expect(try await fixture.origin.requestCount("/flaky/3/photo.jpg") == 4)
    let history = try sql(database, "SELECT attempt, outcome, error_code FROM thumbs.job_attempts").rows
    #expect(history == [["1", "retry", "fetch_failed"]])
  }

  @Test func transientErrorsStopAtMaxAttempts() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    try sql(database, "SELECT thumbs.enqueue($1)", [fixture.origin.url("/status/503")])
    try sql(database, "UPDATE thumbs.jobs SET max_attempts = 2")
    let policy = RetryPolicy(baseSeconds: 0.2, capSeconds: 1, jitter: 0)
    _ = try await drainQueue(databaseURL: database, storage: fixture.storage) { $0.retryPolicy = policy }
    try await Task.sleep(for: .seconds(0.4))
    let last = try await drainQueue(databaseURL: database, storage: fixture.storage) {
      $0.retryPolicy = policy
    }
    #expect(last.failed == 1)
    #expect(
      try sql(database, "SELECT state, attempts, error_code FROM thumbs.jobs").rows[0] == [
        "failed", "2", "fetch_failed",
      ])
    let outcomes = try sql(database, "SELECT outcome FROM thumbs.job_attempts").rows.map { $0[0] }
    #expect(outcomes == ["retry", "failed"])
  }

  @Test func cancelStopsARunningJobAtItsNextHeartbeat() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    let slow = try sql(database, "SELECT thumbs.enqueue($1)", [fixture.slowURL(seconds: 20)]).rows[0][0]!
    // One slot, heartbeats every 0.5 s.
    let worker = try BackgroundWorker(databaseURL: database, storage: fixture.storage) {
      $0.leaseSeconds = 1.5
    }
    #expect(
      try await eventually(timeout: 10) {
        try sql(database, "SELECT state FROM thumbs.jobs").rows[0][0] == "running"
      })
    #expect(try sql(database, "SELECT thumbs.cancel($1::bigint)", [slow]).rows[0][0] == "t")
    let cancelledAt = Date()
    // The only slot is freed by the next heartbeat, so a second job runs long before the slow one could end.
    let next = try sql(database, "SELECT thumbs.enqueue($1)", [fixture.origin.url("/files/photo.jpg")]).rows[
      0][0]!
    let ran = try await eventually(timeout: 10) { try state(database, next) == "succeeded" }
    #expect(ran)
    #expect(Date().timeIntervalSince(cancelledAt) < 5)
    let totals = try await worker.stop()
    #expect(totals.leaseLost == 1 && totals.succeeded == 1)
    #expect(try state(database, slow) == "cancelled")
    #expect(
      try sql(database, "SELECT count(*) FROM thumbs.variants WHERE job_id = $1::bigint", [slow]).rows[0][0]
        == "0")
  }

  /// A job whose work is done holds no slot while its outcome is written: with one slot, the next job is
  /// leased and fetched while the first one's write waits (here on a row lock the test holds).
  @Test func theNextJobStartsWhileAnOutcomeIsBeingWritten() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    let first = try sql(database, "SELECT thumbs.enqueue($1)", [fixture.slowURL(seconds: 2)]).rows[0][0]!
    let worker = try BackgroundWorker(databaseURL: database, storage: fixture.storage)
    #expect(try await eventually(timeout: 10) { try state(database, first) == "running" })
    // The first job's outcome write (UPDATE ... FOR UPDATE on its row) waits until this commits.
    let locker = try PostgresConnection(conninfo: database)
    defer { locker.close() }
    try locker.execute(script: "BEGIN")
    _ = try locker.query("SELECT id FROM thumbs.jobs WHERE id = $1::bigint FOR UPDATE", [first])
    let photo = fixture.origin.url("/files/photo.jpg")
    let second = try sql(database, "SELECT thumbs.enqueue($1)", [photo]).rows[0][0]!
    #expect(
      try await fixture.origin.requestCount("/files/photo.jpg", reaching: 1, timeout: 15) == 1,
      "the second job was fetched while the first one's outcome waited")
    #expect(try state(database, first) == "running")
    try locker.execute(script: "COMMIT")
    #expect(
      try await eventually(timeout: 10) {
        try state(database, first) == "succeeded" && state(database, second) == "succeeded"
      })
    let totals = try await worker.stop()
    #expect(totals.succeeded == 2 && totals.leaseLost == 0)
  }

  @Test func notificationsWakeAnIdleWorkerAndPollingCoversLostOnes() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    let url = fixture.origin.url("/files/photo.jpg")
    // A poll interval far longer than the test: a quick start can only come from LISTEN/NOTIFY.
    let worker = try BackgroundWorker(databaseURL: database, storage: fixture.storage) {
      $0.pollInterval = 60
    }
    #expect(try await eventually(timeout: 5) { try listenerBackends(database).count == 1 })
    try await Task.sleep(for: .milliseconds(300))
    let woken = try sql(database, "SELECT thumbs.enqueue($1::text || '?n=1')", [url]).rows[0][0]!
    #expect(try await eventually(timeout: 3) { try state(database, woken) == "succeeded" })
    #expect(try startDelay(database, woken) < 0.5)

    // The listening connection is cut (a database restart, a proxy): the worker reconnects and listens again.
    let before = try listenerBackends(database)
    try sql(
      database,
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'thumbd-listen'")
    #expect(
      try await eventually(timeout: 5) {
        let now = try listenerBackends(database); return now.count == 1 && now != before
      })
    try await Task.sleep(for: .milliseconds(300))
    let afterReconnect = try sql(database, "SELECT thumbs.enqueue($1::text || '?n=2')", [url]).rows[0][0]!
    #expect(try await eventually(timeout: 3) { try state(database, afterReconnect) == "succeeded" })
    #expect(try startDelay(database, afterReconnect) < 0.5)
    _ = try await worker.stop()

    // Lost notifications: a job inserted without NOTIFY is found by the next poll.
    let polling = try BackgroundWorker(databaseURL: database, storage: fixture.storage) {
      $0.pollInterval = 0.5
    }
    try await Task.sleep(for: .milliseconds(500))
    let silent = try sql(
      database,
      "INSERT INTO thumbs.jobs (source_url, profile) VALUES ($1::text || '?n=3', 'default') RETURNING id",
      [url]
    ).rows[0][0]!
    #expect(try await eventually(timeout: 5) { try state(database, silent) == "succeeded" })
    #expect(try startDelay(database, silent) < 1.5)
    _ = try await polling.stop()
  }

  /// Only the first two running workers of a fleet listen (each listening backend costs the database
  /// at every notifying commit); the others hold no listening connection. When the two stop, the third
  /// listens from its next heartbeat, and a new upload wakes it at once.
  @Test func onlyTwoWorkersOfAFleetListenAndAnotherTakesOverWhenTheyStop() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    let url = fixture.origin.url("/files/photo.jpg")
    var workers: [BackgroundWorker] = []
    for id in ["w-a", "w-b", "w-c"] {
      workers.append(
        try BackgroundWorker(databaseURL: database, storage: fixture.storage) {
          $0.workerID = id
          $0.pollInterval = 60  // a quick start can only come from a listener
          $0.leaseSeconds = 3  // a heartbeat a second
        })
    }
    #expect(try await eventually(timeout: 10) { try listenerBackends(database).count == 2 })
    try await Task.sleep(for: .seconds(2))
    #expect(try listenerBackends(database).count == 2, "heartbeats keep it at two")
    let woken = try sql(database, "SELECT thumbs.enqueue($1::text || '?n=1')", [url]).rows[0][0]!
    #expect(try await eventually(timeout: 3) { try state(database, woken) == "succeeded" })
    #expect(try startDelay(database, woken) < 0.5)

    let watchers = try listenerBackends(database)
    _ = try await workers[0].stop()
    _ = try await workers[1].stop()
    // The third's own listening backend, not one of the two going away.
    #expect(
      try await eventually(timeout: 10) {
        let now = try listenerBackends(database)
        return now.count == 1 && !watchers.contains(now[0])
      })
    try await Task.sleep(for: .milliseconds(300))
    let taken = try sql(database, "SELECT thumbs.enqueue($1::text || '?n=2')", [url]).rows[0][0]!
    #expect(try await eventually(timeout: 3) { try state(database, taken) == "succeeded" })
    #expect(try startDelay(database, taken) < 0.5)
    #expect(
      try sql(database, "SELECT leased_by FROM thumbs.jobs WHERE id = $1::bigint", [taken]).rows == [["w-c"]])
    _ = try await workers[2].stop()
  }

  @Test func outcomesOfManyJobsAreWrittenInOneCallAndFenced() async throws {
    let database = try TestDatabase.create()
    let queue = JobQueue(client: try await PostgresClient(conninfo: database, pool: pool))
    for n in 1...6 { try sql(database, "SELECT thumbs.enqueue('http://example.com/\(n).jpg')") }
    let jobs = try await queue.lease(workerID: "w1", limit: 10, leaseSeconds: 30)
    #expect(jobs.count == 6)
    #expect(Set(jobs.map(\.profileSpec)).count == 1 && jobs.allSatisfy { !$0.profileSpec.isEmpty })
    var stale = jobs[5]
    stale.leaseToken = "00000000-0000-0000-0000-000000000000"
    let record = VariantRecord(name: "small", width: 2, height: 1, format: "jpeg", bytes: 9, storageKey: "k")
    let written = try await queue.record([
      (jobs[0], .succeeded([record])),
      (
        jobs[1],
        .succeeded([
          record,
          VariantRecord(name: "large", width: 4, height: 2, format: "jpeg", bytes: 20, storageKey: "k2"),
        ])
      ),
      (jobs[2], .failed(JobError(.timeout, "slow"), retryAfter: 30)),
      (jobs[3], .failed(JobError(.notFound, "gone"), retryAfter: nil)),
      (jobs[4], .handedBack), (stale, .succeeded([record])),
    ])
    #expect(written == Set(jobs[0...4].map(\.id)))
    let states = try sql(database, "SELECT state, attempts FROM thumbs.jobs ORDER BY id").rows
    #expect(
      states == [
        ["succeeded", "1"], ["succeeded", "1"], ["queued", "1"], ["failed", "1"], ["queued", "0"],
        ["running", "1"],
      ])
    #expect(try sql(database, "SELECT count(*) FROM thumbs.variants").rows[0][0] == "3")
    // Heartbeats: one statement for all; a cancelled job's lease is not extended.
    try sql(database, "SELECT thumbs.cancel($1::bigint)", [String(jobs[5].id)])
    let more = try await queue.lease(workerID: "w1", limit: 10, leaseSeconds: 30)
    #expect(more.map(\.id) == [jobs[4].id])  // the handed-back one (the retry is not due)
    let extended = try await queue.heartbeat(
      [(more[0].id, more[0].leaseToken), (jobs[5].id, jobs[5].leaseToken)], leaseSeconds: 60)
    #expect(extended == [more[0].id])
  }

  @Test func workersRegisterAndStaleRegistrationsExpire() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    let worker = try BackgroundWorker(databaseURL: database, storage: fixture.storage) { $0.concurrency = 3 }
    #expect(
      try await eventually(timeout: 5) {
        try sql(database, "SELECT concurrency, state, stale FROM thumbs.worker_overview").rows == [
          ["3", "running", "f"]
        ]
      })
    _ = try await worker.stop()
    #expect(try sql(database, "SELECT count(*) FROM thumbs.workers").rows[0][0] == "0")
    try sql(
      database,
      """
      INSERT INTO thumbs.workers (id, host, pid, version, concurrency, memory_budget, lease_ttl, last_heartbeat_at)
      VALUES ('gone', 'h', 1, 'v', 1, 1, '60 s', now() - interval '10 minutes'),
             ('quiet', 'h', 2, 'v', 1, 1, '60 s', now() - interval '90 seconds')
      """)
    #expect(
      try sql(database, "SELECT id FROM thumbs.worker_overview WHERE stale ORDER BY id").rows == [
        ["gone"], ["quiet"],
      ])
    #expect(try sql(database, "SELECT thumbs.expire_workers()").rows[0][0] == "1")
    #expect(try sql(database, "SELECT id FROM thumbs.workers").rows == [["quiet"]])
  }

  @Test func retentionDeletesOldFinishedJobsInBatches() async throws {
    let database = try TestDatabase.create()
    try sql(
      database,
      """
      INSERT INTO thumbs.jobs (source_url, profile, state, finished_at)
      SELECT 'http://example.com/' || g, 'default', s, now() - ((g + 0.5) || ' days')::interval
        FROM generate_series(1, 10) g, unnest(ARRAY['succeeded', 'failed', 'cancelled']) s
      """)
    try sql(
      database,
      "INSERT INTO thumbs.jobs (source_url, profile, created_at) VALUES ('http://example.com/old-but-queued', 'default', now() - interval '30 days')"
    )
    try sql(
      database,
      "INSERT INTO thumbs.variants SELECT id, 'small', 1, 1, 'jpeg', 1, 'k' FROM thumbs.jobs WHERE state = 'succeeded'"
    )
    // Finished more than 7 days ago (7.5 to 10.5 days) in each of the three states: 12 jobs, 4 per call.
    #expect(try sql(database, "SELECT thumbs.prune('7 days', 4)").rows[0][0] == "4")
    let queue = JobQueue(client: try await PostgresClient(conninfo: database, pool: pool))
    #expect(try await queue.prune(olderThanSeconds: 7 * 86400, batchSize: 4) == 8)
    #expect(try sql(database, "SELECT count(*) FROM thumbs.jobs").rows[0][0] == "19")
    #expect(try sql(database, "SELECT count(*) FROM thumbs.jobs WHERE state = 'queued'").rows[0][0] == "1")
    #expect(try sql(database, "SELECT count(*) FROM thumbs.variants").rows[0][0] == "6")
  }

  @Test func adminViewsAnswerTheOperatorsQuestions() async throws {
    let database = try TestDatabase.create()
    let queue = JobQueue(client: try await PostgresClient(conninfo: database, pool: pool))
    try sql(database, "SELECT thumbs.enqueue('http://example.com/stuck.jpg')")
    try sql(database, "SELECT thumbs.enqueue('http://example.com/done.jpg')")
    let leased = try await queue.lease(workerID: "w-dead", limit: 2, leaseSeconds: 0.2)
    #expect(try await queue.complete(leased[1], variants: []))
    try await Task.sleep(for: .milliseconds(400))
    let stuck = try sql(database, "SELECT id, leased_by, worker_registered FROM thumbs.stuck_jobs").rows
    #expect(stuck == [[String(leased[0].id), "w-dead", "f"]])
    let minute = try sql(database, "SELECT sum(succeeded), count(*) FROM thumbs.throughput").rows[0]
    #expect(minute == ["1", "60"])
    // Rescue empties stuck_jobs.
    #expect(try await queue.rescueExpired() == [leased[0].id])
    #expect(try sql(database, "SELECT count(*) FROM thumbs.stuck_jobs").rows[0][0] == "0")
  }
}

/// The last statement of the database's `thumbd-listen` backend (`LISTEN thumbs_jobs`), nil when there
/// is none.
func listenerLastStatement(_ database: String) throws -> String? {
  try sql(
    database,
    "SELECT query FROM pg_stat_activity WHERE application_name = 'thumbd-listen' AND datname = current_database()"
  ).rows.first?[0] ?? nil
}

private func listenerBackends(_ database: String) throws -> [String] {
  try sql(
    database,
    "SELECT pid::text FROM pg_stat_activity WHERE application_name = 'thumbd-listen' AND datname = current_database()"
  ).rows.map { $0[0]! }
}

private func state(_ database: String, _ id: String) throws -> String? {
  try sql(database, "SELECT state FROM thumbs.jobs WHERE id = $1::bigint", [id]).rows.first?[0] ?? nil
}

/// Seconds from the job's creation to its lease.
private func startDelay(_ database: String, _ id: String) throws -> Double {
  let value = try sql(
    database, "SELECT extract(epoch FROM started_at - created_at) FROM thumbs.jobs WHERE id = $1::bigint",
    [id]
  ).rows[0][0]
  return Double(value ?? "") ?? .infinity
}
