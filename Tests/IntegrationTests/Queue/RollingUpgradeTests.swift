import Blocking
import Foundation
import Queue
import Testing

/// During a rolling upgrade, workers of a release that cannot read `s3://` originals run beside those
/// that can. The older ones register without saying which source schemes they read; their own lease
/// statement (compiled into them, here the same statement) passes over `s3://` jobs, which stay queued
/// with their attempts untouched until a worker that reads them leases them.
@Suite(.serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)))
struct RollingUpgradeTests {
  let pool = BlockingPool(threads: 2, name: "rolling-upgrade-test")

  @Test func aWorkerThatCannotReadS3SourcesLeavesTheirJobsToOnesThatCan() async throws {
    let database = try TestDatabase.create()
    let queue = JobQueue(client: try await PostgresClient(conninfo: database, pool: pool))
    defer { queue.client.close() }
    // An older release's registration: the columns it knows, nothing about source schemes.
    try sql(
      database,
      """
      INSERT INTO thumbs.workers (id, host, pid, version, concurrency, memory_budget, lease_ttl)
      VALUES ('older', 'h1', 1, '0.9.0', 2, 1048576, interval '60 seconds')
      """)
    try await queue.announce(
      WorkerRecord(
        id: "newer", host: "h2", pid: 2, version: "1.0.0", concurrency: 2, memoryBudget: 1 << 20,
        leaseSeconds: 60),
      counters: WorkerCounters(), stopping: false)
    let s3 = try #require(sql(database, "SELECT thumbs.enqueue('s3://originals/a.jpg')").rows[0][0])
    let upper = try #require(sql(database, "SELECT thumbs.enqueue('S3://originals/b.jpg')").rows[0][0])
    let http = try #require(sql(database, "SELECT thumbs.enqueue('http://example.com/a.jpg')").rows[0][0])

    let older = try await queue.lease(workerID: "older", limit: 10, leaseSeconds: 30)
    #expect(older.map { "\($0.id)" } == [http])
    let waiting = try sql(
      database,
      "SELECT id::text, state, attempts::text, leased_by FROM thumbs.jobs WHERE id <> $1::bigint ORDER BY id",
      [http]
    ).rows
    #expect(waiting == [[s3, "queued", "0", nil], [upper, "queued", "0", nil]])

    let newer = try await queue.lease(workerID: "newer", limit: 10, leaseSeconds: 30)
    #expect(newer.map { "\($0.id)" } == [s3, upper])
    // A worker with no row yet (it registers with its first housekeeping round) is let through.
    let another = try #require(sql(database, "SELECT thumbs.enqueue('s3://originals/c.jpg')").rows[0][0])
    let unregistered = try await queue.lease(workerID: "not-yet-registered", limit: 10, leaseSeconds: 30)
    #expect(unregistered.map { "\($0.id)" } == [another])
  }
}
