import Foundation
import TestSupport
import Testing
import ThumbCore

/// Presigned URLs as an S3 server hands them out: botocore signs them (Tests/Support/presign.py) for the
/// second test server, moto without authentication (moto with authentication answers presigned GETs
/// with HTTP 500). Two signings of one object are one job and one download, and no signature reaches
/// `last_error`, an event or the originals row.
///
/// What that server does with a wrong signature: it serves the object (HTTP 200), as it does an expired
/// URL: it checks neither. So expiry is tested against the test origin's /presigned/ route, which
/// refuses like S3 (PresignedSourceTests), and here a wrong signature only shows that thumbd sends the
/// URL it was given, unchanged.
@Suite(
  .serialized,
  .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)),
  .enabled(if: S3TestServer.current?.openEndpoint != nil, Comment(rawValue: S3TestServer.skipReason)))
struct PresignedS3Tests {
  let server = S3TestServer.current!

  /// `count` presigned GET URLs of `key` in the server's `presigned` bucket, through `endpoint`; with
  /// `upload`, the object is written first.
  func presign(endpoint: String, key: String, upload: [UInt8]? = nil, count: Int) throws -> [String] {
    var arguments = [
      TestDatabase.repoRoot.appendingPathComponent("Tests/Support/presign.py").path, "--endpoint", endpoint,
      "--bucket", "presigned", "--key", key, "--count", "\(count)",
    ]
    if let upload {
      let file = try makeTemporaryDirectory().appendingPathComponent("photo.jpg")
      try Data(upload).write(to: file)
      arguments += ["--put", file.path]
    }
    let run = try runProgram(testVirtualenv + "/bin/python", arguments, withStandardError: true)
    #expect(run.code == 0, "presign.py: \(run.output)")
    return run.output.split(separator: "\n").map(String.init).filter { $0.hasPrefix("http") }
  }

  @Test func twoSigningsOfOneObjectAreOneJobAndOneDownload() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    let proxy = try S3FaultProxy(upstream: try #require(server.openEndpoint))
    let key = "u/\(UUID().uuidString.lowercased())/IMG_2041.jpg"
    let urls = try presign(endpoint: proxy.endpoint, key: key, upload: try makeTestJPEG(), count: 2)
    try #require(urls.count == 2 && urls[0] != urls[1])
    let signatures = urls.compactMap { url in
      URLComponents(string: url)?.queryItems?.first { $0.name == "X-Amz-Signature" }?.value
    }
    #expect(signatures.count == 2 && signatures[0] != signatures[1])

    let id = try #require(sql(database, "SELECT thumbs.enqueue($1)", [urls[0]]).rows[0][0])
    #expect(try sql(database, "SELECT thumbs.enqueue($1)", [urls[1]]).rows == [[id]])
    #expect(try sql(database, "SELECT source_url FROM thumbs.jobs").rows == [[urls[1]]])
    // A wrong signature is still a signature: the same object, so the same job.
    let forged = urls[1].replacingOccurrences(of: signatures[1], with: String(repeating: "0", count: 64))
    #expect(try sql(database, "SELECT thumbs.enqueue($1)", [forged]).rows == [[id]])

    let totals = try await drainQueue(databaseURL: database, storage: fixture.storage)
    #expect(totals.succeeded == 1)
    let gets = try proxy.requests("GET", key)
    #expect(gets.count == 1, "\(gets.map(\.path))")
    #expect(gets.first?.path.contains(String(repeating: "0", count: 64)) == true, "the URL was sent as given")
    #expect(gets.first?.outcome == "forwarded 200", "moto without authentication checks no signature")

    let shown = try sql(
      database,
      """
      SELECT coalesce(j.last_error, ''), e.payload ->> 'source_url', o.url
        FROM thumbs.jobs j, thumbs.events e, thumbs.originals o WHERE e.job_id = j.id
      """
    ).rows
    #expect(shown.count == 1)
    for text in shown.first ?? [] {
      for signature in signatures { #expect(text?.contains(signature) != true, "\(text ?? "")") }
    }
    #expect(shown.first?[1]?.contains("X-Amz-Signature=****") == true, "\(shown)")
    #expect(shown.first?[2]?.contains("X-Amz-Signature") == false, "the originals row names the identity")
  }
}
