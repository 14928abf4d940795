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
}
