import Blocking
import Foundation
import Queue
import Testing
import ThumbCore

/// Owners take turns (migrations/0019): among due jobs of equal priority the lease serves owners in
/// turn, jobs without an owner as one owner, priorities first; a job's place is derived from the rows by
/// the jobs_take_turn triggers, so every way a job enters or leaves the queue keeps it right.
@Suite(.serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)))
struct OwnerTurnTests {
  let pool = BlockingPool(threads: 2, name: "owner-turn-test")

  /// Enqueues `count` jobs of `owner` (nil: none) through thumbs.enqueue; returns their ids.
  @discardableResult
  func enqueue(
    _ database: String, _ owner: String?, count: Int = 1, priority: Int = 0, tag: String = #function
  ) throws -> [String] {
    try (0..<count).map { _ in
      let url = "http://example.com/\(tag.filter(\.isLetter))/\(UUID().uuidString).jpg"
      return try #require(
        sql(
          database, "SELECT thumbs.enqueue($1, priority => $2::int, owner => $3)",
          [url, "\(priority)", owner]
        )
        .rows[0][0])
    }
  }

  /// Leases one job at a time until none is due; returns the owners in the order they were served.
  func drainOneByOne(_ database: String, _ queue: JobQueue) async throws -> [String] {
    var served: [String] = []
    while let job = try await queue.lease(workerID: "w", limit: 1, leaseSeconds: 30).first {
      served.append(
        try sql(database, "SELECT coalesce(owner, '-') FROM thumbs.jobs WHERE id = $1", ["\(job.id)"])
          .rows[0][0] ?? "?")
    }
    return served
  }

  @Test func ownersAreServedInTurnAndJobsWithoutOneAreOneOwner() async throws {
    let database = try TestDatabase.create()
    let queue = JobQueue(client: try await PostgresClient(conninfo: database, pool: pool))
    defer { queue.client.close() }
    try enqueue(database, "bulk", count: 6)
    try enqueue(database, "alice", count: 2)
    try enqueue(database, "bob")
    try enqueue(database, nil, count: 2)
    #expect(
      try await drainOneByOne(database, queue) == [
        "bulk", "alice", "bob", "-", "bulk", "alice", "-", "bulk", "bulk", "bulk", "bulk",
      ])
  }

  @Test func anUploadDuringABulkImportIsNextAndPrioritiesComeFirst() async throws {
    let database = try TestDatabase.create()
    let queue = JobQueue(client: try await PostgresClient(conninfo: database, pool: pool))
    defer { queue.client.close() }
    try enqueue(database, "bulk", count: 50)
    #expect(try await queue.lease(workerID: "w", limit: 10, leaseSeconds: 30).count == 10)
    // 40 of the import wait; a new upload of another owner goes before the import's next (migrations/0020:
    // an owner new to the line is first in the head's round).
    let upload = try enqueue(database, "carol")[0]
    #expect(try await queue.lease(workerID: "w", limit: 1, leaseSeconds: 30).map { "\($0.id)" } == [upload])
    // The importer's own urgent job (priority 10) goes before anyone's priority 0.
    let urgent = try enqueue(database, "bulk", priority: 10)[0]
    try enqueue(database, "dave")
    #expect(try await queue.lease(workerID: "w", limit: 1, leaseSeconds: 30).map { "\($0.id)" } == [urgent])
    // An owner's empty string is refused: NULL means none.
    #expect(throws: PostgresError.self) {
      try sql(database, "SELECT thumbs.enqueue('http://example.com/e.jpg', owner => '')")
    }
  }

  @Test func aDeferredJobHasNoTurnUntilItIsDueThenJoinsTheEndOfItsOwnersLine() async throws {
    let database = try TestDatabase.create()
    let queue = JobQueue(client: try await PostgresClient(conninfo: database, pool: pool))
    defer { queue.client.close() }
    let later = try #require(
      sql(
        database,
        "SELECT thumbs.enqueue('http://example.com/later.jpg', run_at => now() + interval '1 hour', owner => 'bulk')"
      ).rows[0][0])
    try enqueue(database, "bulk", count: 3)
    let turn = { (id: String) in
      try sql(database, "SELECT turn FROM thumbs.jobs WHERE id = $1", [id]).rows[0][0]
    }
    #expect(try turn(later) == nil)
    #expect(try await queue.promoteDue() == 0)
    // Its time comes: promotion places it after the owner's three (turns 0, 3 and 5: the round after).
    // (Moved back by hand with the trigger off: as if an hour had passed.)
    try sql(database, "ALTER TABLE thumbs.jobs DISABLE TRIGGER jobs_take_turn_update")
    try sql(database, "UPDATE thumbs.jobs SET run_at = now() - interval '1 second' WHERE id = \(later)")
    try sql(database, "ALTER TABLE thumbs.jobs ENABLE TRIGGER jobs_take_turn_update")
    #expect(try turn(later) == nil)
    #expect(try await queue.promoteDue() == 1)
    #expect(try turn(later) == "7")
    // An operator's "run it now" places a deferred job at once, without waiting for a promotion.
    let other = try #require(
      sql(
        database,
        "SELECT thumbs.enqueue('http://example.com/o.jpg', run_at => now() + interval '1 hour', owner => 'x')"
      ).rows[0][0])
    try sql(database, "UPDATE thumbs.jobs SET run_at = now() WHERE id = \(other)")
    #expect(try turn(other) == "0")
    // A priority change takes a place in the other priority's line.
    try sql(database, "UPDATE thumbs.jobs SET priority = 5 WHERE id = \(later)")
    #expect(try turn(later) == "0")
  }

  @Test func everyWayBackIntoTheQueueTakesAPlace() async throws {
    let database = try TestDatabase.create()
    let queue = JobQueue(client: try await PostgresClient(conninfo: database, pool: pool))
    defer { queue.client.close() }
    let ids = try enqueue(database, "bulk", count: 4)
    let leased = try await queue.lease(workerID: "w", limit: 2, leaseSeconds: 30)
    #expect(leased.map { "\($0.id)" } == Array(ids.prefix(2)))
    // Leased jobs hold no place.
    #expect(
      try sql(database, "SELECT count(*) FROM thumbs.jobs WHERE state = 'running' AND turn IS NOT NULL").rows
        == [["0"]])
    // Handed back: the end of the owner's line, after the two still queued.
    _ = try await queue.record(leased.map { ($0, .handedBack) })
    #expect(
      try sql(database, "SELECT id::text FROM thumbs.jobs ORDER BY priority DESC, turn, id").rows.map {
        $0[0]
      }
        == [ids[2], ids[3], ids[0], ids[1]])
    // Cancelled, then retried by the backend: the round after the owner's last (turn 11).
    try sql(database, "SELECT thumbs.cancel(\(ids[2]))")
    #expect(try sql(database, "SELECT thumbs.retry(\(ids[2]))").rows == [["t"]])
    #expect(try sql(database, "SELECT turn FROM thumbs.jobs WHERE id = \(ids[2])").rows == [["13"]])
    // A failed attempt with a backoff waits without a place.
    let job = try #require(try await queue.lease(workerID: "w", limit: 1, leaseSeconds: 30).first)
    #expect(try await queue.fail(job, error: JobError(.timeout, "slow"), retryAfter: 60))
    #expect(try sql(database, "SELECT turn FROM thumbs.jobs WHERE id = \(job.id)").rows == [[nil]])
    // After a TRUNCATE nothing is left to go stale: the next job starts the line again.
    try sql(database, "TRUNCATE thumbs.jobs CASCADE")
    let fresh = try enqueue(database, "bulk")[0]
    #expect(try sql(database, "SELECT turn FROM thumbs.jobs WHERE id = \(fresh)").rows == [["0"]])
  }

  @Test func ownerOverviewShowsTheLargestBacklogFirst() throws {
    let database = try TestDatabase.create()
    try enqueue(database, "bulk", count: 5)
    try enqueue(database, "alice", count: 2)
    try enqueue(database, nil)
    let rows = try sql(
      database, "SELECT coalesce(owner, '-'), queued, due, running FROM thumbs.owner_overview"
    ).rows
    #expect(rows == [["bulk", "5", "5", "0"], ["alice", "2", "2", "0"], ["-", "1", "1", "0"]])
  }
}
