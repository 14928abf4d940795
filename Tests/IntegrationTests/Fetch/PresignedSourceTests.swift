import Foundation
import TestSupport
import Testing
import ThumbCore

/// Presigned source URLs: two signings of one object are one source (one job while it lives, one
/// download), the newer URL replaces a queued job's older one, an expired one is `source_expired`, and
/// no signature or URL password reaches a log line, `last_error` or the originals row.
@Suite(.serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)))
struct PresignedSourceTests {
  /// A URL of the origin's /presigned/ route, signed `age` seconds ago for `lifetime` seconds.
  static func presigned(
    _ fixture: QueueFixture, _ name: String = "photo.jpg", signature: String, age: Int = 0,
    lifetime: Int = 3600
  ) -> String {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "UTC")
    formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
    let date = formatter.string(from: Date().addingTimeInterval(-Double(age)))
    return fixture.origin.url(
      "/presigned/\(name)?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIATESTCREDENTIAL%2F20261124"
        + "&X-Amz-Date=\(date)&X-Amz-Expires=\(lifetime)&X-Amz-SignedHeaders=host&X-Amz-Signature=\(signature)"
    )
  }

  @Test func theDatabaseAndTheWorkerAgreeOnEveryIdentity() throws {
    let database = try TestDatabase.create()
    for (url, identity) in sourceIdentityCases {
      let answer = try sql(database, "SELECT thumbs.source_identity($1)", [url]).rows
      #expect(answer == [[identity]], "\(url)")
      #expect(SourceURL.identity(url) == identity, "\(url)")
    }
  }

  @Test func twoSigningsOfOnePhotoAreOneJobAndOneDownload() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    try sql(
      database,
      "INSERT INTO thumbs.profiles (name, spec) SELECT 'p1', spec FROM thumbs.profiles WHERE name = 'default'"
    )
    let first = Self.presigned(fixture, signature: "1111aaaa")
    let second = Self.presigned(fixture, signature: "2222bbbb")
    let third = Self.presigned(fixture, signature: "3333cccc")
    let id = try sql(database, "SELECT thumbs.enqueue($1)", [first]).rows[0][0]
    // The same object signed again, while the job waits: the same job, which takes the newer URL.
    #expect(try sql(database, "SELECT thumbs.enqueue($1)", [second]).rows == [[id]])
    #expect(try sql(database, "SELECT source_url FROM thumbs.jobs WHERE id = $1", [id]).rows == [[second]])
    // Another profile of the same object: a job of its own, marked to be leased with the first.
    let other = try sql(database, "SELECT thumbs.enqueue($1, 'p1')", [third]).rows[0][0]
    #expect(other != id)
    #expect(try sql(database, "SELECT count(*) FROM thumbs.jobs WHERE shares_source").rows == [["2"]])
    // Any other query parameter still makes another source.
    let versioned = fixture.origin.url("/presigned/photo.jpg?versionId=2&X-Amz-Signature=1")
    #expect(try sql(database, "SELECT thumbs.enqueue($1)", [versioned]).rows[0][0] != id)
    try sql(
      database, "SELECT thumbs.cancel($1)", [try sql(database, "SELECT max(id) FROM thumbs.jobs").rows[0][0]])

    let totals = try await drainQueue(databaseURL: database, storage: fixture.storage, concurrency: 2)
    #expect(totals.succeeded == 2)
    #expect(try await fixture.origin.requestCount("/presigned/photo.jpg") == 1)
    // The originals row names the object, without the signature.
    let originals = try sql(database, "SELECT url, downloads FROM thumbs.originals").rows
    #expect(originals == [[fixture.origin.url("/presigned/photo.jpg"), "1"]], "\(originals)")
  }

  @Test func aRunningJobKeepsItsURLAndAFreshOneWaitsForIt() throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    let first = Self.presigned(fixture, signature: "aaaa")
    let id = try sql(database, "SELECT thumbs.enqueue($1)", [first]).rows[0][0]
    try sql(database, "UPDATE thumbs.jobs SET state = 'running' WHERE id = $1", [id])
    #expect(
      try sql(database, "SELECT thumbs.enqueue($1)", [Self.presigned(fixture, signature: "bbbb")]).rows == [
        [id]
      ])
    #expect(try sql(database, "SELECT source_url FROM thumbs.jobs WHERE id = $1", [id]).rows == [[first]])
  }

  @Test func anExpiredURLIsSourceExpiredAndNoSecretIsShown() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    let expired = Self.presigned(fixture, signature: "SIGNATUREOFEXPIREDURL", age: 7200, lifetime: 600)
    let withPassword = fixture.origin.url("/files/missing.jpg").replacingOccurrences(
      of: "://", with: "://photos:PASSWORDINURL@")
    let badSignature = fixture.origin.url(
      "/presigned/other.jpg?X-Amz-Expires=60&X-Amz-Signature=SIGNOTCHECKED")
    for url in [expired, withPassword, badSignature] { try sql(database, "SELECT thumbs.enqueue($1)", [url]) }

    let worker = try WorkerProcess(
      databaseURL: database, storage: fixture.storage,
      settings: ["THUMBD_DRAIN": "1", "THUMBD_LOG_LEVEL": "debug", "THUMBD_LOG_FORMAT": "json"])
    #expect(await worker.waitForExit(timeout: 60) == 0, "log:\n\(worker.log)")

    let rows = try sql(
      database, "SELECT source_url, state, error_code, last_error FROM thumbs.jobs ORDER BY id"
    ).rows
    #expect(rows.map { $0[1] } == ["failed", "failed", "failed"], "\(rows)")
    #expect(rows.map { $0[2] } == ["source_expired", "not_found", "http_error"], "\(rows)")
    let errors = rows.map { $0[3] ?? "" }
    #expect(errors[0].contains("expired at"), "\(errors[0])")
    let secrets = ["SIGNATUREOFEXPIREDURL", "PASSWORDINURL", "SIGNOTCHECKED", "AKIATESTCREDENTIAL"]
    let log = worker.log
    #expect(log.contains("source_expired"), "log:\n\(log)")
    for secret in secrets {
      for error in errors { #expect(!error.contains(secret), "last_error shows \(secret): \(error)") }
      #expect(!log.contains(secret), "the log shows \(secret):\n\(log)")
    }
    #expect(errors[1].contains("photos:****@"), "\(errors[1])")
  }

  /// A re-render of a photo enqueued by a presigned URL fetches that URL, expired by then: the job fails
  /// as source_expired, its event names the photo, the current thumbnails stay; enqueueing a fresh URL
  /// of the photo renders it with the present spec, after which nothing about it is stale or failed.
  @Test func aReRenderThatMeetsAnExpiredURLKeepsTheThumbnailsUntilAFreshURLComes() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    func current() throws -> [[String?]] {
      try sql(
        database,
        "SELECT name, storage_key FROM thumbs.current_variants WHERE external_id = 'photo-1' ORDER BY 1"
      ).rows
    }
    // Valid for three more seconds at the origin: enough for the first render, expired at the re-render.
    let shortLived = Self.presigned(fixture, signature: "FIRSTSIGNING", age: 3597, lifetime: 3600)
    try sql(
      database, "SELECT thumbs.enqueue($1, external_id => 'photo-1', metadata => '{\"user_id\": 7}')",
      [shortLived])
    #expect(try await drainQueue(databaseURL: database, storage: fixture.storage).succeeded == 1)
    let before = try current()
    #expect(before.count == 4)
    try await Task.sleep(for: .seconds(4))

    try sql(
      database,
      "UPDATE thumbs.profiles SET spec = jsonb_set(spec, '{variants,2,quality}', '71') WHERE name = 'default'"
    )
    #expect(try sql(database, "SELECT thumbs.rerender('default')").rows == [["1"]])
    #expect(try await drainQueue(databaseURL: database, storage: fixture.storage).failed == 1)
    let event = try sql(
      database,
      """
      SELECT payload->>'external_id', payload->>'error_code', payload->>'rerender', payload->'metadata'->>'user_id'
        FROM thumbs.events WHERE kind = 'failed'
      """
    ).rows
    #expect(event == [["photo-1", "source_expired", "true", "7"]])
    #expect(try current() == before, "the photo keeps its thumbnails")
    #expect(try sql(database, "SELECT thumbs.rerender('default')").rows == [["0"]], "not again for this spec")
    #expect(
      try sql(database, "SELECT stale, failed FROM thumbs.rerender_overview WHERE profile = 'default'").rows
        == [["1", "1"]])

    // The backend answers the event with a fresh URL of the photo.
    let fresh = Self.presigned(fixture, signature: "SECONDSIGNING")
    try sql(database, "SELECT thumbs.enqueue($1, external_id => 'photo-1')", [fresh])
    #expect(try await drainQueue(databaseURL: database, storage: fixture.storage).succeeded == 1)
    let after = try current()
    #expect(after.count == 4 && after[2] != before[2], "the small variant was made with the new quality")
    #expect(
      try sql(database, "SELECT stale, failed FROM thumbs.rerender_overview WHERE profile = 'default'").rows
        == [["0", "0"]])
    #expect(try sql(database, "SELECT thumbs.rerender('default')").rows == [["0"]])
  }
}
