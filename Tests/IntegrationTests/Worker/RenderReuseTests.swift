import Foundation
import Imaging
import Queue
import Testing
import ThumbCore

/// Identical originals render once: a job whose original has the same bytes (SHA-256) and whose profile
/// has the same spec as a job that already succeeded takes that job's variants, decoding nothing.
@Suite(.serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)))
struct RenderReuseTests {
  struct Fixture {
    let database: String
    let storage: URL
    let origin: TestOrigin
  }

  /// One photo served under three names: two copies of the same bytes and one different photo.
  func fixture() throws -> Fixture {
    let root = try makeTemporaryDirectory()
    var image = PixelBuffer(width: 900, height: 600, channels: 3)
    for i in 0..<image.pixels.count { image.pixels[i] = UInt8(truncatingIfNeeded: i / 5) }
    let photo = Data(try JPEG.encode(image, quality: 85))
    try photo.write(to: root.appendingPathComponent("upload.jpg"))
    try photo.write(to: root.appendingPathComponent("shared-copy.jpg"))
    for i in 0..<image.pixels.count { image.pixels[i] = UInt8(truncatingIfNeeded: i / 3) }
    try Data(try JPEG.encode(image, quality: 85)).write(to: root.appendingPathComponent("other.jpg"))
    return Fixture(
      database: try TestDatabase.create(), storage: try makeTemporaryDirectory(),
      origin: try TestOrigin(root: root))
  }

  func enqueue(_ fixture: Fixture, _ name: String, profile: String = "default") throws -> String {
    try sql(
      fixture.database, "SELECT thumbs.enqueue($1, $2)", [fixture.origin.url("/files/\(name)"), profile]
    )
    .rows[0][0]!
  }

  func variants(_ fixture: Fixture, job: String) throws -> [[String?]] {
    try sql(
      fixture.database,
      "SELECT name, width, height, format, bytes, storage_key FROM thumbs.variants WHERE job_id = $1 ORDER BY name",
      [job]
    ).rows
  }

  @Test func aCopyAtAnotherURLTakesTheFirstJobsVariantsWithoutDecoding() async throws {
    let fixture = try fixture()
    let first = try enqueue(fixture, "upload.jpg")
    let rendered = try await drainQueue(databaseURL: fixture.database, storage: fixture.storage)
    #expect(rendered.succeeded == 1 && rendered.decodes == 1 && rendered.reusedRenders == 0)

    let copy = try enqueue(fixture, "shared-copy.jpg")
    let reused = try await drainQueue(databaseURL: fixture.database, storage: fixture.storage)
    #expect(reused.succeeded == 1)
    #expect(reused.decodes == 0, "nothing decoded for the copy")
    #expect(reused.reusedRenders == 1)
    #expect(reused.uploads == 0, "no object written for the copy")

    let firstRows = try variants(fixture, job: first)
    #expect(firstRows.count == 4)
    #expect(try variants(fixture, job: copy) == firstRows, "the copy's rows name the same objects")
    for row in firstRows {
      #expect(FileManager.default.fileExists(atPath: fixture.storage.appendingPathComponent(row[5]!).path))
    }
    let jobs = try sql(
      fixture.database,
      "SELECT id, state, render_key, reused_from, thumbhash, "
        + "(SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(stage_ms) k) FROM thumbs.jobs ORDER BY id"
    ).rows
    #expect(jobs[0][1] == "succeeded" && jobs[1][1] == "succeeded")
    #expect(jobs[0][2] != nil && jobs[0][2] == jobs[1][2], "one render key for the same bytes and profile")
    #expect(jobs[0][3] == nil)
    #expect(jobs[1][3] == first, "the copy's row says whose variants it took")
    #expect(jobs[1][4] == jobs[0][4], "and carries the same ThumbHash")
    // Stage times (migrations/0007): every stage for the job that rendered, only the download for the copy.
    #expect(jobs[0][5] == "{decode,encode,fetch,resize,store}")
    #expect(jobs[1][5] == "{fetch}")
    // The copy was downloaded (its bytes decide), and recorded as an original of its own.
    #expect(try await fixture.origin.requestCount("/files/shared-copy.jpg") == 1)
  }

  /// Reuse reads the photos' current thumbnails, which retention keeps: a copy still finds them after
  /// the job that rendered them was pruned.
  @Test func aCopyFindsThePhotosThumbnailsAfterTheirJobWasPruned() async throws {
    let fixture = try fixture()
    let first = try enqueue(fixture, "upload.jpg")
    _ = try await drainQueue(databaseURL: fixture.database, storage: fixture.storage)
    let rendered = try variants(fixture, job: first)
    #expect(try sql(fixture.database, "SELECT thumbs.prune('0 seconds', 1000)").rows == [["1"]])

    let copy = try enqueue(fixture, "shared-copy.jpg")
    let reused = try await drainQueue(databaseURL: fixture.database, storage: fixture.storage)
    #expect(reused.succeeded == 1 && reused.decodes == 0 && reused.reusedRenders == 1, "\(reused)")
    #expect(try variants(fixture, job: copy) == rendered)
    #expect(
      try sql(fixture.database, "SELECT reused_from FROM thumbs.jobs WHERE id = $1::bigint", [copy]).rows
        == [[first]])
  }

  @Test func otherBytesOrAnotherProfileStillRender() async throws {
    let fixture = try fixture()
    let first = try enqueue(fixture, "upload.jpg")
    _ = try await drainQueue(databaseURL: fixture.database, storage: fixture.storage)

    // Another profile for the same bytes: its spec differs, so its render key does.
    try sql(
      fixture.database,
      """
      INSERT INTO thumbs.profiles (name, spec)
      VALUES ('avatar', '{"variants": [{"name": "a", "width": 64, "height": 64, "fit": "cover"}]}')
      """)
    let avatar = try enqueue(fixture, "shared-copy.jpg", profile: "avatar")
    let other = try enqueue(fixture, "other.jpg")
    let totals = try await drainQueue(databaseURL: fixture.database, storage: fixture.storage)
    #expect(totals.succeeded == 2)
    #expect(totals.decodes == 2 && totals.reusedRenders == 0)
    let keys = try sql(
      fixture.database, "SELECT id, render_key, reused_from FROM thumbs.jobs ORDER BY id"
    ).rows
    #expect(Set(keys.map { $0[1] }).count == 3, "three different render keys")
    #expect(keys.allSatisfy { $0[2] == nil })
    #expect(try variants(fixture, job: avatar).map { $0[0] } == ["a"])
    #expect(try variants(fixture, job: other).count == 4)
    #expect(try variants(fixture, job: first).count == 4)
  }

  @Test func aChangedProfileRendersAgain() async throws {
    let fixture = try fixture()
    _ = try enqueue(fixture, "upload.jpg")
    _ = try await drainQueue(databaseURL: fixture.database, storage: fixture.storage)
    try sql(
      fixture.database,
      """
      UPDATE thumbs.profiles
         SET spec = jsonb_set(spec, '{variants,0,quality}', '70')
       WHERE name = 'default'
      """)
    _ = try enqueue(fixture, "shared-copy.jpg")
    let totals = try await drainQueue(databaseURL: fixture.database, storage: fixture.storage)
    #expect(totals.succeeded == 1 && totals.decodes == 1 && totals.reusedRenders == 0)
  }
}
