import Foundation
import Queue
import Testing

/// A photo's current thumbnails (thumbs.current_variants) are kept apart from the job history:
/// retention prunes jobs, never them; a newer successful job of the photo replaces them, an older one
/// finishing late does not; render reuse reads them.
@Suite(.serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)))
struct CurrentVariantsTests {
  func current(_ database: String, _ photo: String) throws -> [[String?]] {
    try sql(
      database,
      """
      SELECT job_id, name, width, storage_key FROM thumbs.current_variants
       WHERE external_id = $1 ORDER BY name
      """, [photo]
    ).rows
  }

  /// Completes a queued job with these variants through the worker's own completion statement (it is
  /// leased by hand first, as the lease statement would).
  func succeed(_ database: String, _ job: String, _ variants: [(name: String, width: Int)]) throws {
    let token = try sql(
      database,
      "UPDATE thumbs.jobs SET state = 'running', lease_token = gen_random_uuid() WHERE id = $1::bigint "
        + "RETURNING lease_token::text", [job]
    ).rows[0][0]!
    let id = try #require(Int64(job))
    let parameters = SQL.CompleteJobs.Parameters(
      ids: [id], tokens: [token], variantJobIDs: variants.map { _ in id }, names: variants.map(\.name),
      widths: variants.map(\.width), heights: variants.map(\.width), formats: variants.map { _ in "jpeg" },
      bytes: variants.map { _ in 1000 }, storageKeys: variants.map { "k/\(job)/\($0.name)" },
      thumbhashes: [nil], renderKeys: [nil], reusedFrom: [nil], stageMS: [nil], specVersions: [nil],
      warnings: ["[]"], publicURLBase: nil, media: [nil])
    let written = try sql(database, SQL.CompleteJobs.statement.text, parameters.values).rows
    #expect(written.map { $0[0] } == [job])
  }

  @Test func aPhotosThumbnailsOutliveItsPrunedJobs() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    let job = try sql(
      database, "SELECT thumbs.enqueue($1, external_id => 'photo-1')",
      [fixture.origin.url("/files/photo.jpg")]
    ).rows[0][0]!
    let totals = try await drainQueue(databaseURL: database, storage: fixture.storage)
    #expect(totals.succeeded == 1)
    let before = try current(database, "photo-1")
    #expect(
      before.map { $0[1] } == ["large", "medium", "small", "square"] && before.allSatisfy { $0[0] == job })
    let thumbhash = try sql(database, "SELECT thumbhash FROM thumbs.jobs").rows[0][0]

    #expect(try sql(database, "SELECT thumbs.prune('0 seconds', 1000)").rows == [["1"]])
    #expect(try sql(database, "SELECT count(*) FROM thumbs.jobs").rows == [["0"]])
    #expect(try sql(database, "SELECT count(*) FROM thumbs.variants").rows == [["0"]])
    #expect(try current(database, "photo-1") == before)
    let row = try sql(
      database,
      "SELECT source_url, profile, thumbhash FROM thumbs.current_variants WHERE external_id = 'photo-1' LIMIT 1"
    ).rows
    #expect(row == [[fixture.origin.url("/files/photo.jpg"), "default", thumbhash]])
  }

  @Test func theNewestJobOfAPhotoIsCurrentWhicheverFinishesLast() throws {
    let database = try TestDatabase.create()
    let older = try sql(database, "SELECT thumbs.enqueue('https://cdn.example/a-v1.jpg', external_id => 'p')")
      .rows[0][0]!
    try sql(database, "UPDATE thumbs.jobs SET state = 'running' WHERE id = $1::bigint", [older])
    let newer = try sql(database, "SELECT thumbs.enqueue('https://cdn.example/a-v2.jpg', external_id => 'p')")
      .rows[0][0]!
    #expect(newer != older)

    try succeed(database, newer, [("large", 1600), ("small", 320)])
    #expect(try current(database, "p").map { $0[0] } == [newer, newer])
    // The older job finishes after the newer one: it does not replace what is current.
    try succeed(database, older, [("large", 1500), ("small", 300), ("square", 256)])
    #expect(
      try current(database, "p") == [
        [newer, "large", "1600", "k/\(newer)/large"], [newer, "small", "320", "k/\(newer)/small"],
      ])
    let source = try sql(database, "SELECT source_url FROM thumbs.photos WHERE external_id = 'p'").rows
    #expect(source == [["https://cdn.example/a-v2.jpg"]])

    // A later job with fewer variants (its profile lost one) leaves only its own.
    let latest = try sql(
      database, "SELECT thumbs.enqueue('https://cdn.example/a-v3.jpg', external_id => 'p')"
    )
    .rows[0][0]!
    try succeed(database, latest, [("large", 1200)])
    #expect(try current(database, "p") == [[latest, "large", "1200", "k/\(latest)/large"]])
    // A failure changes nothing that is current.
    let failed = try sql(
      database, "SELECT thumbs.enqueue('https://cdn.example/a-v4.jpg', external_id => 'p')"
    )
    .rows[0][0]!
    try sql(
      database, "UPDATE thumbs.jobs SET state = 'failed', finished_at = now() WHERE id = $1::bigint", [failed]
    )
    #expect(try current(database, "p").map { $0[0] } == [latest])
  }

  @Test func withoutAnExternalIDThePhotoIsItsSource() throws {
    let database = try TestDatabase.create()
    let signed =
      "https://b.s3.amazonaws.com/k.jpg?X-Amz-Date=20261124T120000Z&X-Amz-Expires=60&X-Amz-Signature="
    let first = try sql(database, "SELECT thumbs.enqueue($1)", [signed + "aa"]).rows[0][0]!
    try succeed(database, first, [("large", 100)])
    let second = try sql(database, "SELECT thumbs.enqueue($1)", [signed + "bb"]).rows[0][0]!
    try succeed(database, second, [("large", 200)])
    let rows = try sql(
      database, "SELECT external_id, source_url, job_id, width FROM thumbs.current_variants"
    ).rows
    #expect(rows == [[nil, "https://b.s3.amazonaws.com/k.jpg", second, "200"]])
  }

  /// The migration fills the table from what older jobs name: each photo's newest succeeded job.
  @Test func theMigrationTakesEachPhotosNewestSucceededJob() throws {
    let database = try TestDatabase.create()
    var jobs: [String] = []
    for url in ["https://cdn.example/x.jpg", "https://cdn.example/y.jpg"] {
      let job = try sql(database, "SELECT thumbs.enqueue($1)", [url]).rows[0][0]!
      try succeed(database, job, [("large", 100 + jobs.count)])
      jobs.append(job)
    }
    let again = try sql(database, "SELECT thumbs.enqueue('https://cdn.example/x.jpg')").rows[0][0]!
    try succeed(database, again, [("large", 150), ("small", 50)])
    let expected = try sql(database, "SELECT * FROM thumbs.current_variants ORDER BY source_url, name").rows
    #expect(expected.count == 3)

    // As before this version: no current thumbnails recorded, and the migration not applied.
    try sql(database, "DELETE FROM thumbs.photos")
    try sql(database, "DELETE FROM thumbs.schema_migrations WHERE version = '0009'")
    let migrate = try runMigrate(database)
    #expect(migrate.code == 0, "\(migrate.output)")
    let migrated = try sql(database, "SELECT * FROM thumbs.current_variants ORDER BY source_url, name").rows
    #expect(migrated.map { Array($0.prefix(10)) } == expected.map { Array($0.prefix(10)) })
  }
}
