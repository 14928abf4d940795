import Blocking
import Foundation
import Queue
import Testing

/// The backend's own photo id: with one, (external_id, profile) alone decides what enqueue returns. A
/// queued job of the photo is the answer and takes the newer URL; a running one gets a new job behind it.
@Suite(.serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)))
struct ExternalIDTests {
  let pool = BlockingPool(threads: 8, name: "external-id-test")

  func enqueue(_ database: String, _ url: String, _ externalID: String?) throws -> String {
    try sql(database, "SELECT thumbs.enqueue($1, external_id => $2)", [url, externalID]).rows[0][0]!
  }

  func job(_ database: String, _ id: String) throws -> [String?] {
    try sql(database, "SELECT state, source_url, external_id FROM thumbs.jobs WHERE id = $1::bigint", [id])
      .rows[0]
  }

  @Test func aQueuedPhotoTakesTheNewerURLAndARunningOneGetsANewJob() throws {
    let database = try TestDatabase.create()
    let first = try enqueue(database, "https://cdn.example/u/42/original-v1.jpg", "photo-42")
    #expect(try enqueue(database, "https://cdn.example/u/42/original-v2.jpg", "photo-42") == first)
    #expect(try job(database, first) == ["queued", "https://cdn.example/u/42/original-v2.jpg", "photo-42"])

    // Without the external id, or under another one, the same URL is another photo.
    #expect(try enqueue(database, "https://cdn.example/u/42/original-v2.jpg", nil) != first)
    #expect(try enqueue(database, "https://cdn.example/u/42/original-v2.jpg", "photo-43") != first)

    // A worker is rendering it: the next original waits behind it in a job of its own, which the one
    // after that replaces in turn.
    try sql(database, "UPDATE thumbs.jobs SET state = 'running' WHERE id = $1::bigint", [first])
    let second = try enqueue(database, "https://cdn.example/u/42/original-v3.jpg", "photo-42")
    #expect(second != first)
    #expect(try job(database, first)[1] == "https://cdn.example/u/42/original-v2.jpg")
    #expect(try enqueue(database, "https://cdn.example/u/42/original-v4.jpg", "photo-42") == second)
    #expect(try job(database, second) == ["queued", "https://cdn.example/u/42/original-v4.jpg", "photo-42"])
    #expect(
      try sql(database, "SELECT count(*) FROM thumbs.jobs WHERE external_id = 'photo-42'").rows == [["2"]])

    // Another profile of the photo is a job of its own; an empty id is refused.
    try sql(
      database,
      "INSERT INTO thumbs.profiles (name, spec) SELECT 'p1', spec FROM thumbs.profiles WHERE name = 'default'"
    )
    let other = try sql(
      database,
      "SELECT thumbs.enqueue('https://cdn.example/u/42/original-v4.jpg', 'p1', external_id => 'photo-42')"
    ).rows[0][0]
    #expect(other != second)
    #expect(throws: PostgresError.self) { try enqueue(database, "https://cdn.example/x.jpg", "") }
  }

  @Test func concurrentEnqueuesOfOnePhotoLeaveOneQueuedJobWithOneOfTheirURLs() async throws {
    let database = try TestDatabase.create()
    let ids = try await withThrowingTaskGroup(of: String.self) { group in
      for version in 0..<16 {
        group.addTask { [pool] in
          try await pool.run { () throws -> String in
            try enqueue(database, "https://cdn.example/u/7/v\(version).jpg", "photo-7")
          }
        }
      }
      return try await group.reduce(into: Set<String>()) { $0.insert($1) }
    }
    #expect(ids.count == 1)
    let rows = try sql(database, "SELECT state, source_url FROM thumbs.jobs").rows
    #expect(rows.count == 1 && rows[0][0] == "queued" && rows[0][1]!.hasPrefix("https://cdn.example/u/7/v"))
  }

  /// An edited photo enqueued under its external id while its job waits is the one rendered.
  @Test func theEditedOriginalIsTheOneRendered() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    let edited = try makeTestJPEG(width: 600, height: 800)
    try Data(edited).write(to: fixture.origin.root.appendingPathComponent("edited.jpg"))
    let id = try enqueue(database, fixture.origin.url("/files/photo.jpg"), "photo-9")
    #expect(try enqueue(database, fixture.origin.url("/files/edited.jpg"), "photo-9") == id)

    let totals = try await drainQueue(databaseURL: database, storage: fixture.storage)
    #expect(totals.succeeded == 1)
    let large = try sql(
      database, "SELECT width, height FROM thumbs.variants WHERE job_id = $1::bigint AND name = 'large'", [id]
    ).rows
    #expect(large == [["600", "800"]])
    #expect(try await fixture.origin.requestCount("/files/photo.jpg") == 0)
    #expect(try await fixture.origin.requestCount("/files/edited.jpg") == 1)
  }
}
