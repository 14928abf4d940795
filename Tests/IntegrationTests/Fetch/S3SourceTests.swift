import Foundation
import Storage
import TestSupport
import Testing
import ThumbCore
import Worker

/// Originals named `s3://BUCKET/KEY`, read from the test S3 server (moto with authentication and IAM
/// policies) with the worker's own credentials: a private original is rendered and downloaded once for
/// all its jobs; a missing key is `not_found`; a bucket outside `--source-buckets` is `blocked_source`;
/// a refusal of the credentials defers the job (never fails it) and stops a worker at start; a refusal
/// of one object, while the bucket answers, fails that job.
@Suite(
  .serialized,
  .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)),
  .enabled(if: S3TestServer.current?.sourceBucket != nil, Comment(rawValue: S3TestServer.skipReason)),
  .enabled(if: WorkerProcess.binary != nil, Comment(rawValue: WorkerProcess.skipReason)))
struct S3SourceTests {
  let server = S3TestServer.current!
  var bucket: String { server.sourceBucket! }
  let folder = "originals-\(UUID().uuidString.lowercased())"

  func jobs(_ database: String) throws -> [[String?]] {
    try sql(
      database,
      "SELECT source_url, state, attempts::text, error_code, last_error FROM thumbs.jobs ORDER BY id"
    ).rows
  }

  /// The jobs' rows for a failure message.
  func seen(_ database: String) -> String { (try? jobs(database)).map { "\($0)" } ?? "?" }

  /// The worker's settings through variables, as an operator gives them.
  func settings(endpoint: String, accessKey: String? = nil, secret: String? = nil) -> [String: String] {
    [
      "THUMBD_SOURCE_BUCKETS": bucket, "THUMBD_S3_ENDPOINT": endpoint, "THUMBD_S3_PATH_STYLE": "1",
      "AWS_ACCESS_KEY_ID": accessKey ?? server.accessKey, "AWS_SECRET_ACCESS_KEY": secret ?? server.secretKey,
      "THUMBD_POLL_INTERVAL": "0.5",
    ]
  }

  @Test func privateOriginalsAreReadWithTheWorkersOwnCredentials() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    let proxy = try S3FaultProxy(upstream: server.endpoint)
    // A key with a space and a non-ASCII letter: taken byte for byte, encoded for the request.
    let key = "\(folder)/2026/a photo ü.jpg"
    try server.put(try makeTestJPEG(width: 1400, height: 1000), key: key, bucket: bucket)
    try sql(
      database,
      "INSERT INTO thumbs.profiles (name, spec) SELECT 'p1', spec FROM thumbs.profiles WHERE name = 'default'"
    )
    let source = "s3://\(bucket)/\(key)"
    try sql(database, "SELECT thumbs.enqueue($1)", [source])
    try sql(database, "SELECT thumbs.enqueue($1, 'p1')", [source])
    try sql(database, "SELECT thumbs.enqueue($1)", ["s3://\(bucket)/\(folder)/missing.jpg"])
    // A bucket the credentials could read, but that is not a source bucket.
    try sql(database, "SELECT thumbs.enqueue($1)", ["s3://\(server.bucket)/\(folder)/elsewhere.jpg"])

    let totals = try await drainQueue(databaseURL: database, storage: fixture.storage) { config in
      config.sourceBuckets = [bucket]
      config.s3Endpoint = proxy.endpoint
      config.s3PathStyle = true
      config.s3Credentials = server.credentials
    }
    #expect(totals.succeeded == 2 && totals.failed == 2)
    let rows = try jobs(database)
    #expect(
      rows.map { [$0[1], $0[3]] } == [
        ["succeeded", nil], ["succeeded", nil], ["failed", "not_found"], ["failed", "blocked_source"],
      ])
    #expect(rows[2][4]?.contains("no such key") == true, "\(rows[2])")
    #expect(rows[3][4]?.contains("--source-buckets") == true, "\(rows[3])")
    #expect(try sql(database, "SELECT count(*) FROM thumbs.variants").rows == [["8"]])
    // One download for both profiles, signed; the start-up check's probe is the only other GET.
    let gets = try proxy.requests("GET")
    #expect(gets.filter { $0.path.contains("a%20photo%20%C3%BC.jpg") }.count == 1, "\(gets.map(\.path))")
    #expect(gets.allSatisfy { $0.signed })
    #expect(gets.contains { $0.path == "/\(bucket)/.thumbd-source-check" })
    #expect(
      try sql(database, "SELECT url FROM thumbs.originals").rows.map { $0[0] } == [source],
      "the originals row names the s3:// URL")
  }

  @Test func withoutSourceBucketsAnS3SourceIsBlocked() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    try sql(database, "SELECT thumbs.enqueue($1)", ["s3://\(bucket)/\(folder)/a.jpg"])
    let totals = try await drainQueue(databaseURL: database, storage: fixture.storage)
    #expect(totals.failed == 1)
    let row = try jobs(database)[0]
    #expect(row[3] == "blocked_source" && row[4]?.contains("--source-buckets is not set") == true, "\(row)")
  }

  /// A video in a private bucket is read by signed ranged GETs: its head, the boxes to its index, the
  /// index and its first keyframes, never the whole object.
  @Test(.enabled(if: VideoMatrix.isAvailable, Comment(rawValue: VideoMatrix.skipReason)))
  func aPrivateVideoIsReadByRangedGets() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    let proxy = try S3FaultProxy(upstream: server.endpoint)
    let video = try VideoMatrix.bytes("long-index-at-end.mp4")
    let key = "\(folder)/IMG_0042.MOV"
    try server.put(video, key: key, bucket: bucket)
    try sql(database, "SELECT thumbs.enqueue($1)", ["s3://\(bucket)/\(key)"])
    let totals = try await drainQueue(databaseURL: database, storage: fixture.storage) { config in
      config.sourceBuckets = [bucket]
      config.s3Endpoint = proxy.endpoint
      config.s3PathStyle = true
      config.s3Credentials = server.credentials
    }
    #expect(totals.succeeded == 1, "\(seen(database))")
    #expect(try sql(database, "SELECT count(*) FROM thumbs.variants").rows == [["4"]])
    let gets = try proxy.requests("GET", "IMG_0042.MOV")
    #expect(
      gets.count >= 3 && gets.allSatisfy { $0.signed && $0.headers["range"]?.hasPrefix("bytes=") == true },
      "\(gets.map { $0.headers["range"] ?? "whole" })")
  }

  /// bucket is deferred, loudly, its attempt not used; once the bucket answers again they succeed. A
  /// refusal of one object while the bucket answers is that job's own failure.
  @Test func aRefusalOfTheCredentialsDefersAndARefusalOfOneObjectFails() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    let proxy = try S3FaultProxy(upstream: server.endpoint)
    let key = "\(folder)/locked.jpg"
    try server.put(try makeTestJPEG(), key: key, bucket: bucket)
    let worker = try WorkerProcess(
      databaseURL: database, storage: fixture.storage, settings: settings(endpoint: proxy.endpoint))
    #expect(
      await eventually(timeout: 15) { worker.log.contains("storage is writable") }, "log:\n\(worker.log)")

    // Every GET of the bucket refused, the probe's too.
    try proxy.inject(["status": 403, "code": "AccessDenied", "count": -1, "method": "GET", "path": bucket])
    let id = try #require(sql(database, "SELECT thumbs.enqueue($1)", ["s3://\(bucket)/\(key)"]).rows[0][0])
    #expect(
      try await eventually(timeout: 30) {
        try jobs(database).map { [$0[1], $0[2], $0[3]] } == [["queued", "0", "storage_refused"]]
      }, "\(seen(database)), log:\n\(worker.log)")
    let lastError = try jobs(database)[0][4] ?? ""
    #expect(lastError.contains("AccessDenied") && lastError.contains("s3:ListBucket"), "\(lastError)")
    #expect(worker.log.contains("storage refuses this worker's requests"), "log:\n\(worker.log)")
    #expect(try proxy.requests("GET", ".thumbd-source-check").count >= 2, "the refusal was probed")

    try proxy.clear()
    var succeeded = false
    for _ in 0..<15 where !succeeded {
      try sql(
        database, "UPDATE thumbs.jobs SET run_at = now() WHERE id = $1::bigint AND state = 'queued'", [id])
      succeeded = try await eventually(timeout: 2) { try jobs(database)[0][1] == "succeeded" }
    }
    #expect(succeeded, "\(seen(database)), log:\n\(worker.log)")

    // One object refused (a bucket policy on it), the bucket answering: that job fails, at once.
    try server.put(try makeTestJPEG(), key: "\(folder)/denied.jpg", bucket: bucket)
    try proxy.inject([
      "status": 403, "code": "AccessDenied", "count": -1, "method": "GET", "path": "denied.jpg",
    ])
    try sql(database, "SELECT thumbs.enqueue($1)", ["s3://\(bucket)/\(folder)/denied.jpg"])
    #expect(
      try await eventually(timeout: 30) { try jobs(database).count == 2 && jobs(database)[1][1] == "failed" },
      "\(seen(database)), log:\n\(worker.log)")
    let denied = try jobs(database)[1]
    #expect(
      denied[3] == "http_error" && denied[4]?.contains("the object itself is refused") == true, "\(denied)")
    worker.send(SIGTERM)
    #expect(await worker.waitForExit(timeout: 15) == 0, "log:\n\(worker.log)")
  }

  /// The contract's start-up check, for source buckets: credentials that cannot read one, or a bucket
  /// that does not exist, end the worker within 15 s with one line naming the bucket and the code.
  @Test(arguments: [("limited", "AccessDenied"), ("missing", "NoSuchBucket")])
  func aWorkerThatCannotReadASourceBucketDoesNotStart(case: String, code: String) async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    var environment = settings(
      endpoint: server.endpoint, accessKey: `case` == "limited" ? server.limitedAccessKey : nil,
      secret: `case` == "limited" ? server.limitedSecretKey : nil)
    let named = `case` == "missing" ? "thumbd-no-such-originals" : bucket
    environment["THUMBD_SOURCE_BUCKETS"] = named
    let worker = try WorkerProcess(databaseURL: database, storage: fixture.storage, settings: environment)
    let status = await worker.waitForExit(timeout: 15)
    #expect(status != nil && status != 0, "log:\n\(worker.log)")
    let line = worker.log.split(separator: "\n").last { $0.hasPrefix("thumbd worker:") } ?? ""
    #expect(line.contains("s3://\(named)") && line.contains(code), "log:\n\(worker.log)")
    #expect(try sql(database, "SELECT count(*) FROM thumbs.workers WHERE state = 'running'").rows == [["0"]])
  }
}
