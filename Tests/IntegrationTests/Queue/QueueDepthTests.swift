import Blocking
import Foundation
import Queue
import Testing

/// `JobQueue.queueDepth` (SQL/queue_depth.sql), and connections that connect at their first statement.
@Suite(.serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)))
struct QueueDepthTests {
  let pool = BlockingPool(threads: 2, name: "queue-depth-test")

  @Test func countsQueuedReadyAndRunningJobs() async throws {
    let database = try TestDatabase.create()
    let queue = JobQueue(client: try await PostgresClient(conninfo: database, pool: pool))
    defer { queue.client.close() }
    #expect(
      try await queue.queueDepth() == QueueDepth(queued: 0, ready: 0, running: 0, oldestReadySeconds: 0))

    try insertFinishedJobs(database, count: 50)
    for index in 0..<5 { try sql(database, "SELECT thumbs.enqueue($1)", ["http://example.com/\(index).jpg"]) }
    try sql(
      database, "SELECT thumbs.enqueue('http://example.com/later.jpg', run_at => now() + interval '1 hour')")
    try sql(
      database,
      "UPDATE thumbs.jobs SET run_at = now() - interval '90 seconds' WHERE source_url LIKE '%/0.jpg'")
    // The oldest ready job goes first, so lease from the other end.
    try sql(
      database,
      "UPDATE thumbs.jobs SET priority = 1 WHERE source_url LIKE '%/3.jpg' OR source_url LIKE '%/4.jpg'")
    let leased = try await queue.lease(workerID: "w", limit: 2, leaseSeconds: 30)
    #expect(leased.count == 2)

    let depth = try await queue.queueDepth()
    #expect(depth.queued == 4 && depth.ready == 3 && depth.running == 2)
    #expect(depth.oldestReadySeconds >= 90 && depth.oldestReadySeconds < 120)
  }

  /// It runs every few seconds on every worker while the table may hold millions of finished jobs, so it
  /// must not read them: only the partial indexes of queued and running jobs.
  @Test func readsOnlyTheIndexesOfLiveJobs() throws {
    let database = try TestDatabase.create()
    try insertFinishedJobs(database, count: 5000)
    for index in 0..<20 {
      try sql(database, "SELECT thumbs.enqueue($1)", ["http://example.com/\(index).jpg"])
    }
    try sql(
      database, "UPDATE thumbs.jobs SET state = 'running' WHERE id IN (SELECT max(id) FROM thumbs.jobs)")
    let connection = try PostgresConnection(conninfo: database)
    defer { connection.close() }
    try connection.execute(script: "VACUUM ANALYZE thumbs.jobs")
    try connection.execute(script: "PREPARE depth(float8) AS " + SQL.QueueDepth.statement.text)
    let plan = try connection.query("EXPLAIN EXECUTE depth(0)").rows.compactMap {
      $0.first ?? nil
    }
    .joined(separator: "\n")
    #expect(!plan.contains("Seq Scan on jobs"), "\(plan)")
    #expect(plan.contains("jobs_ready_idx") && plan.contains("jobs_running_idx"), "\(plan)")
  }

  /// The fleet shares one count: a younger one is the answer, an older one is counted again by one worker
  /// while the others answer with the old count, without waiting for it.
  @Test func theFleetSharesOneCount() async throws {
    let database = try TestDatabase.create()
    let queue = JobQueue(client: try await PostgresClient(conninfo: database, pool: pool))
    defer { queue.client.close() }
    try sql(database, "SELECT thumbs.enqueue('http://example.com/a.jpg')")
    #expect(try await queue.queueDepth(maxAge: 60).queued == 1)
    try sql(database, "SELECT thumbs.enqueue('http://example.com/b.jpg')")
    // Younger than a minute: the stored count.
    #expect(try await queue.queueDepth(maxAge: 60).queued == 1)
    // Older than 0 s: counted again, and stored.
    #expect(try await queue.queueDepth(maxAge: 0).queued == 2)
    try sql(database, "SELECT thumbs.enqueue('http://example.com/c.jpg')")
    #expect(try await queue.queueDepth(maxAge: 60).queued == 2)

    // Another worker is counting (it holds the sample's row): this one answers with the old count at once.
    let counting = try PostgresConnection(conninfo: database)
    defer { counting.close() }
    try counting.execute(script: "BEGIN; SELECT * FROM thumbs.queue_sample FOR UPDATE")
    let started = ContinuousClock.now
    #expect(try await queue.queueDepth(maxAge: 0).queued == 2)
    #expect(started.duration(to: .now) < .seconds(2))
    try counting.execute(script: "ROLLBACK")
    #expect(try await queue.queueDepth(maxAge: 0).queued == 3)

    // Without a sample row (deleted by hand), it counts and stores one again.
    try sql(database, "DELETE FROM thumbs.queue_sample")
    #expect(try await queue.queueDepth(maxAge: 60).queued == 3)
    #expect(try sql(database, "SELECT count(*) FROM thumbs.queue_sample").rows == [["1"]])
  }

  @Test func aLazyConnectionConnectsAtItsFirstStatement() async throws {
    let database = try TestDatabase.create()
    // Port 1 on loopback refuses at once: a database that is down.
    let down = "postgresql://postgres@127.0.0.1:1/thumbd?connect_timeout=2"
    #expect(throws: PostgresError.self) { try PostgresConnection(conninfo: down) }
    let waiting = try PostgresConnection(conninfo: down, connectNow: false)
    let error = #expect(throws: PostgresError.self) { try waiting.run(SQL.QueueDepth.self, .init(maxAge: 0)) }
    #expect(error?.kind == .connection)

    let lazy = try PostgresConnection(conninfo: database, connectNow: false)
    defer { lazy.close() }
    #expect(try lazy.run(SQL.QueueDepth.self, .init(maxAge: 0)).first?.queued == 0)

    let client = PostgresClient(connectingLaterTo: down, pool: pool)
    let queue = JobQueue(client: client)
    await #expect(throws: PostgresError.self) { try await queue.queueDepth() }
    let later = JobQueue(client: try await PostgresClient(conninfo: database, pool: pool, connectNow: false))
    defer { later.client.close() }
    #expect(try await later.queueDepth().queued == 0)
  }

  private func insertFinishedJobs(_ database: String, count: Int) throws {
    try sql(
      database,
      """
      INSERT INTO thumbs.jobs (source_url, profile, state, started_at, finished_at)
      SELECT 'http://example.com/done/' || g, 'default', 'succeeded', now() - interval '2 hours',
             now() - interval '1 hour'
        FROM generate_series(1, $1::int) AS g
      """, [String(count)])
  }
}
