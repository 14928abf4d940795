import Blocking
import Foundation
import Queue
import Testing
import ThumbCore

@Suite(.serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)))
struct QueueTests {
  let pool = BlockingPool(threads: 4, name: "queue-test")

  @Test func migrateIsIdempotentAndSafeConcurrently() async throws {
    let database = try TestDatabase.create()  // already migrated once
    let migrator = try Migrator(directory: TestDatabase.repoRoot.appendingPathComponent("migrations"))
    let results = try await withThrowingTaskGroup(of: [String].self) { group in
      for _ in 0..<3 {
        group.addTask { [pool] in
          try await pool.run { () throws -> [String] in
            let connection = try PostgresConnection(conninfo: database)
            defer { connection.close() }
            return try migrator.apply(on: connection)
          }
        }
      }
      return try await group.reduce(into: []) { $0.append($1) }
    }
    #expect(results.allSatisfy { $0.isEmpty })
    let count = try sql(database, "SELECT count(*) FROM thumbs.schema_migrations").rows[0][0]
    #expect(count == String(migrator.migrations.count))
    let profile = try sql(
      database, "SELECT spec->'variants'->3->>'fit' FROM thumbs.profiles WHERE name = 'default'")
    #expect(profile.rows[0][0] == "cover")
  }

  @Test func enqueueReturnsTheLiveJobUnderConcurrency() async throws {
    let database = try TestDatabase.create()
    let ids = try await withThrowingTaskGroup(of: String.self) { group in
      for _ in 0..<8 {
        group.addTask { [pool] in
          try await pool.run { () throws -> String in
            try sql(database, "SELECT thumbs.enqueue('http://example.com/a.jpg')").rows[0][0]!
          }
        }
      }
      return try await group.reduce(into: Set<String>()) { $0.insert($1) }
    }
    #expect(ids.count == 1)
    #expect(try sql(database, "SELECT count(*) FROM thumbs.jobs").rows[0][0] == "1")
    // Another profile is another job; a finished job does not block a new one.
    try sql(
      database,
      "INSERT INTO thumbs.profiles VALUES ('tiny', '{\"variants\":[{\"name\":\"t\",\"width\":64,\"height\":64}]}')"
    )
    let other = try sql(database, "SELECT thumbs.enqueue('http://example.com/a.jpg', 'tiny')").rows[0][0]
    #expect(other != ids.first)
    try sql(database, "SELECT thumbs.cancel($1::bigint)", [ids.first!])
    let fresh = try sql(database, "SELECT thumbs.enqueue('http://example.com/a.jpg')").rows[0][0]
    #expect(fresh != ids.first)
    #expect(throws: PostgresError.self) { try sql(database, "SELECT thumbs.enqueue('http://x/y', 'nope')") }
  }

  @Test func writesAreFencedOnTheLease() async throws {
    let database = try TestDatabase.create()
    let queue = JobQueue(client: try await PostgresClient(conninfo: database, pool: pool))
    try sql(database, "SELECT thumbs.enqueue('http://example.com/b.jpg')")
    let first = try #require(try await queue.lease(workerID: "zombie", limit: 1, leaseSeconds: 1).first)
    #expect(first.attempt == 1)
    try await Task.sleep(for: .seconds(1.5))
    // The lease expired: a rescue returns the job, another worker takes it.
    #expect(try await queue.rescueExpired() == [first.id])
    let second = try #require(try await queue.lease(workerID: "healthy", limit: 1, leaseSeconds: 30).first)
    #expect(second.id == first.id && second.attempt == 2 && second.leaseToken != first.leaseToken)
    let record = VariantRecord(name: "large", width: 1, height: 1, format: "jpeg", bytes: 1, storageKey: "k")
    // The zombie's writes change nothing.
    #expect(try await queue.heartbeat(first, leaseSeconds: 30) == false)
    #expect(try await queue.complete(first, variants: [record]) == false)
    #expect(try await queue.fail(first, error: JobError(.timeout, "late"), retryAfter: nil) == false)
    #expect(try sql(database, "SELECT count(*) FROM thumbs.variants").rows[0][0] == "0")
    // The holder's do.
    #expect(try await queue.heartbeat(second, leaseSeconds: 30))
    #expect(try await queue.complete(second, variants: [record]))
    #expect(try sql(database, "SELECT state FROM thumbs.jobs").rows[0][0] == "succeeded")
    #expect(try sql(database, "SELECT count(*) FROM thumbs.variants").rows[0][0] == "1")
  }

  @Test func cancelAndRetry() async throws {
    let database = try TestDatabase.create()
    let queue = JobQueue(client: try await PostgresClient(conninfo: database, pool: pool))
    let id = try sql(database, "SELECT thumbs.enqueue('http://example.com/c.jpg')").rows[0][0]!
    let job = try #require(try await queue.lease(workerID: "w", limit: 1, leaseSeconds: 30).first)
    #expect(try sql(database, "SELECT thumbs.cancel($1::bigint)", [id]).rows[0][0] == "t")
    #expect(
      try await queue.complete(
        job,
        variants: [VariantRecord(name: "a", width: 1, height: 1, format: "jpeg", bytes: 1, storageKey: "k")])
        == false)
    #expect(try sql(database, "SELECT state FROM thumbs.jobs").rows[0][0] == "cancelled")
    #expect(try sql(database, "SELECT thumbs.cancel($1::bigint)", [id]).rows[0][0] == "f")
    #expect(try sql(database, "SELECT thumbs.retry($1::bigint)", [id]).rows[0][0] == "t")
    #expect(try sql(database, "SELECT state, attempts FROM thumbs.jobs").rows[0] == ["queued", "0"])
    #expect(try sql(database, "SELECT thumbs.retry($1::bigint)", [id]).rows[0][0] == "f")
    let overview = try sql(database, "SELECT state, jobs FROM thumbs.queue_overview").rows
    #expect(
      overview.map { $0[0]! } == ["queued", "running", "succeeded", "failed", "cancelled", "forgotten"])
    #expect(overview[0][1] == "1")
  }
}
