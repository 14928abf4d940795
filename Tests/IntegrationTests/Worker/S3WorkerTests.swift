import Foundation
import Hashing
import Imaging
import Storage
import TestSupport
import Testing
import ThumbCore

/// `thumbd worker` processes writing to S3 (the test server, moto with signatures checked) as operators
/// configure them: through THUMBD_* and AWS_* variables.
@Suite(
  .serialized,
  .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)),
  .enabled(if: S3TestServer.current != nil, Comment(rawValue: S3TestServer.skipReason)),
  .enabled(if: WorkerProcess.binary != nil, Comment(rawValue: WorkerProcess.skipReason)))
struct S3WorkerTests {
  let server = S3TestServer.current!
  let prefix = "worker-tests/\(UUID().uuidString.lowercased())"

  enum StoreKind: String, CaseIterable, Sendable {
    case s3, file
  }

  /// The worker's settings for the test bucket under `prefix` (path style, given by variables).
  func s3Settings(
    endpoint: String? = nil, bucket: String? = nil, secret: String? = nil
  ) -> [String: String] {
    [
      "THUMBD_STORAGE": "s3://\(bucket ?? server.bucket)/\(prefix)",
      "THUMBD_S3_ENDPOINT": endpoint ?? server.endpoint,
      "THUMBD_S3_PATH_STYLE": "1", "AWS_ACCESS_KEY_ID": server.accessKey,
      "AWS_SECRET_ACCESS_KEY": secret ?? server.secretKey,
    ]
  }

  /// An origin serving `count` generated photos of distinct sizes; their URLs.
  func photoOrigin(count: Int) throws -> (origin: TestOrigin, urls: [String], storage: URL) {
    let root = try makeTemporaryDirectory()
    for index in 0..<count {
      let photo = try makeTestJPEG(width: 900 + 173 * index, height: 700 + 91 * index)
      try Data(photo).write(to: root.appendingPathComponent("photo\(index).jpg"))
    }
    let origin = try TestOrigin(root: root)
    let storage = root.appendingPathComponent("thumbnails")
    try FileManager.default.createDirectory(at: storage, withIntermediateDirectories: true)
    return (origin, (0..<count).map { origin.url("/files/photo\($0).jpg") }, storage)
  }

  func jobStates(_ database: String) throws -> [[String?]] {
    try sql(database, "SELECT state, attempts::text, error_code FROM thumbs.jobs ORDER BY id").rows
  }

  /// The jobs' states for a failure message.
  func seen(_ database: String) -> String { (try? jobStates(database)).map { "\($0)" } ?? "?" }

  /// The done-when: every variant row names an object that holds exactly the bytes its key hashes, as
  /// many as the row says, served as a JPEG that may be cached for ever. The same checks pass for a
  /// local directory.
  @Test(arguments: StoreKind.allCases)
  func everyVariantRowNamesItsStoredObject(kind: StoreKind) async throws {
    let database = try TestDatabase.create()
    let (origin, urls, storage) = try photoOrigin(count: 4)
    for url in urls { try sql(database, "SELECT thumbs.enqueue($1)", [url]) }
    var settings = ["THUMBD_DRAIN": "1", "THUMBD_CONCURRENCY": "2"]
    if kind == .s3 { settings.merge(s3Settings()) { $1 } }
    let worker = try WorkerProcess(databaseURL: database, storage: storage, settings: settings)
    let code = await worker.waitForExit(timeout: 60)
    #expect(code == 0, "log:\n\(worker.log)")
    #expect(
      try jobStates(database).allSatisfy { $0 == ["succeeded", "1", nil] }, "\(seen(database))")

    let rows = try sql(
      database,
      "SELECT name, storage_key, bytes::text, width::text, height::text, format FROM thumbs.variants"
    ).rows
    #expect(rows.count == urls.count * 4)
    for row in rows {
      let (name, key, size) = (row[0]!, row[1]!, Int(row[2]!)!)
      let bytes: [UInt8]
      switch kind {
      case .s3:
        let object = try server.download("\(prefix)/\(key)")
        #expect(object.status == 200, "\(key)")
        #expect(object.headers["content-type"] == "image/jpeg", "\(key)")
        #expect(object.headers["cache-control"] == "public, max-age=31536000, immutable", "\(key)")
        bytes = object.bytes
      case .file:
        bytes = [UInt8](try Data(contentsOf: storage.appendingPathComponent(key)))
      }
      #expect(key.hasSuffix(".jpg") && row[5] == "jpeg", "\(key)")
      #expect(StorageKey.contentHash(of: key) == Digest.sha256Hex(bytes), "\(name) \(key)")
      #expect(key == StorageKey.contentAddressed(bytes, fileExtension: "jpg"))
      #expect(bytes.count == size, "\(name) \(key)")
      let image = try JPEG.decode(bytes)
      #expect("\(image.size.width)" == row[3] && "\(image.size.height)" == row[4], "\(name) \(key)")
    }
    if kind == .s3 {
      // The start-up check's object, and nothing left in the local folder.
      #expect(try server.download("\(prefix)/.thumbd-check").status == 200)
      #expect(try FileManager.default.contentsOfDirectory(atPath: storage.path).isEmpty)
      #expect(worker.log.contains("storage is writable"), "log:\n\(worker.log)")
      #expect(!worker.log.contains(server.secretKey))
    }
    withExtendedLifetime(origin) {}
  }

  /// A configuration the storage refuses stops the worker at start-up, in one line naming the bucket and
  /// S3's own error code, before it leases anything.
  @Test(arguments: [
    ("SignatureDoesNotMatch", "HTTP 403", false), ("NoSuchBucket", "HTTP 404", true),
  ])
  func aRefusedStartUpCheckExitsBeforeLeasing(code: String, status: String, missingBucket: Bool) async throws
  {
    let database = try TestDatabase.create()
    let (origin, urls, storage) = try photoOrigin(count: 1)
    try sql(database, "SELECT thumbs.enqueue($1)", [urls[0]])
    let bucket = missingBucket ? "thumbd-no-such-bucket" : server.bucket
    let wrongSecret = "not-the-secret-\(UUID().uuidString)"
    let worker = try WorkerProcess(
      databaseURL: database, storage: storage,
      settings: s3Settings(bucket: bucket, secret: missingBucket ? nil : wrongSecret))
    let started = ContinuousClock.now
    let exit = await worker.waitForExit(timeout: 15)
    #expect(exit != nil && exit != 0, "exit \(String(describing: exit)), log:\n\(worker.log)")
    #expect(started.duration(to: .now) < .seconds(15))
    let lines = worker.log.split(separator: "\n").filter { $0.contains(bucket) && $0.contains(code) }
    #expect(lines.count == 1, "log:\n\(worker.log)")
    #expect(
      lines.first?.hasPrefix(
        "thumbd worker: storage refused: PUT s3://\(bucket)/\(prefix)/.thumbd-check answered \(status) \(code): "
      )
        == true,
      "log:\n\(worker.log)")
    #expect(!worker.log.contains(wrongSecret))
    #expect(try jobStates(database) == [["queued", "0", nil]])
    #expect(try await origin.requestCount("/files/photo0.jpg") == 0)
  }

  /// A refusal after the start-up check (a permission taken away mid-run) defers the job without using
  /// an attempt, keeps the worker running, and the job succeeds once the storage accepts again.
  @Test func aMidRunRefusalDefersTheJobAndTheWorkerGoesOn() async throws {
    let database = try TestDatabase.create()
    let proxy = try S3FaultProxy(upstream: server.endpoint)
    let (origin, urls, storage) = try photoOrigin(count: 1)
    var settings = s3Settings(endpoint: proxy.endpoint)
    settings["THUMBD_POLL_INTERVAL"] = "0.5"
    let worker = try WorkerProcess(databaseURL: database, storage: storage, settings: settings)
    #expect(
      await eventually(timeout: 15) { worker.log.contains("storage is writable") }, "log:\n\(worker.log)")
    #expect(try proxy.requests("PUT").map(\.path) == ["/\(server.bucket)/\(prefix)/.thumbd-check"])

    try proxy.inject(["status": 403, "code": "AccessDenied", "count": -1, "method": "PUT"])
    let id = try #require(sql(database, "SELECT thumbs.enqueue($1)", [urls[0]]).rows.first?[0] ?? nil)
    #expect(
      try await eventually(timeout: 30) { try jobStates(database) == [["queued", "0", "storage_refused"]] },
      "\(seen(database)), log:\n\(worker.log)")
    let job = try sql(
      database,
      """
      SELECT last_error, attempt_log -> -1 ->> 'outcome', attempt_log -> -1 ->> 'error_code',
             (run_at > now() + interval '5 seconds')::text
        FROM thumbs.jobs WHERE id = $1::bigint
      """, [id]
    ).rows[0]
    #expect(job[0]?.contains("AccessDenied") == true, "\(job)")
    #expect(job[0]?.contains("s3://\(server.bucket)/\(prefix)/") == true, "\(job)")
    #expect(job[1] == "deferred" && job[2] == "storage_refused", "\(job)")
    #expect(job[3] == "true", "the deferral waits: \(job)")
    #expect(!worker.hasExited, "log:\n\(worker.log)")
    let loud = worker.log.split(separator: "\n").filter {
      $0.contains("storage refuses this worker's requests")
    }
    #expect(!loud.isEmpty && loud.allSatisfy { $0.contains("error") }, "log:\n\(worker.log)")
    // Nothing of the job was stored.
    #expect(
      try proxy.requests("PUT").allSatisfy {
        $0.outcome != "forwarded 200" || $0.path.hasSuffix(".thumbd-check")
      })

    try proxy.clear()
    // The deferral is 7.5 s or more: make the job due now, again every 2 s (a job retried moments
    // after a refusal may be deferred again without asking the storage), until it succeeds.
    var succeeded = false
    for _ in 0..<15 where !succeeded {
      try sql(
        database, "UPDATE thumbs.jobs SET run_at = now() WHERE id = $1::bigint AND state = 'queued'", [id])
      succeeded = try await eventually(timeout: 2) { try jobStates(database) == [["succeeded", "1", nil]] }
    }
    #expect(succeeded, "\(seen(database)), log:\n\(worker.log)")
    let keys = try sql(database, "SELECT storage_key FROM thumbs.variants").rows.compactMap { $0[0] }
    #expect(keys.count == 4)
    for key in keys { #expect(try server.download("\(prefix)/\(key)").status == 200, "\(key)") }
    #expect(!worker.hasExited)
    worker.send(SIGTERM)
    #expect(await worker.waitForExit(timeout: 15) == 0, "log:\n\(worker.log)")
    withExtendedLifetime(origin) {}
  }

  /// Uploads are counted once per distinct key; the same photo again stores nothing new (its variants
  /// are found in the bucket, or its renders are reused without asking the bucket at all).
  @Test func storageMetricsCountUploadsOncePerKey() async throws {
    let database = try TestDatabase.create()
    let proxy = try S3FaultProxy(upstream: server.endpoint)
    let (origin, urls, storage) = try photoOrigin(count: 1)
    let worker = try WorkerProcess(
      databaseURL: database, storage: storage, settings: s3Settings(endpoint: proxy.endpoint))
    let port = try #require(await worker.httpPort(), "log:\n\(worker.log)")
    #expect(
      await eventually(timeout: 15) { HTTPProbe.get(port, "/readyz").status == 200 }, "log:\n\(worker.log)")

    try sql(database, "SELECT thumbs.enqueue($1)", [urls[0]])
    #expect(
      try await eventually(timeout: 30) { try jobStates(database) == [["succeeded", "1", nil]] },
      "log:\n\(worker.log)")
    try sql(database, "SELECT thumbs.enqueue($1)", [urls[0] + "?copy=2"])
    #expect(
      try await eventually(timeout: 30) {
        try jobStates(database) == [["succeeded", "1", nil], ["succeeded", "1", nil]]
      }, "log:\n\(worker.log)")

    let variants = try sql(
      database, "SELECT job_id, storage_key, bytes FROM thumbs.variants ORDER BY job_id, name"
    )
    .rows
    #expect(variants.count == 8)
    let distinct = Dictionary(variants.map { ($0[1]!, Int($0[2]!)!) }) { first, _ in first }
    #expect(distinct.count == 4, "the second job's variants are the first's: \(variants)")

    let metrics = try #require(Metrics(HTTPProbe.get(port, "/metrics")))
    #expect(metrics.value("thumbd_storage_objects_total", ["result": "uploaded"]) == Double(distinct.count))
    #expect(metrics.value("thumbd_storage_upload_bytes_total") == Double(distinct.values.reduce(0, +)))
    let alreadyStored = metrics.value("thumbd_storage_objects_total", ["result": "already_stored"]) ?? 0
    let reused = metrics.value("thumbd_renders_reused_total") ?? 0
    #expect(alreadyStored == 4 || reused >= 1, "already_stored \(alreadyStored), renders reused \(reused)")
    // The bucket saw one PUT per distinct key (and the start-up check's).
    let puts = try proxy.requests("PUT").filter { !$0.path.hasSuffix(".thumbd-check") }
    #expect(
      puts.count == distinct.count && puts.allSatisfy { $0.outcome == "forwarded 200" }, "\(puts.map(\.path))"
    )
    #expect(Set(puts.map(\.path)) == Set(distinct.keys.map { "/\(server.bucket)/\(prefix)/\($0)" }))

    worker.send(SIGTERM)
    #expect(await worker.waitForExit(timeout: 15) == 0, "log:\n\(worker.log)")

    // Another worker writes to the same bucket and prefix by another endpoint (no proxy): another
    // storage identity, so nothing is reused from the database. It renders the same bytes again, finds
    // every object there, and uploads nothing.
    let second = try WorkerProcess(databaseURL: database, storage: storage, settings: s3Settings())
    let secondPort = try #require(await second.httpPort(), "log:\n\(second.log)")
    #expect(
      await eventually(timeout: 15) { HTTPProbe.get(secondPort, "/readyz").status == 200 },
      "log:\n\(second.log)")
    try sql(database, "SELECT thumbs.enqueue($1)", [urls[0] + "?copy=3"])
    #expect(
      try await eventually(timeout: 30) {
        try jobStates(database).count == 3
          && jobStates(database).allSatisfy { $0 == ["succeeded", "1", nil] }
      }, "\(seen(database)), log:\n\(second.log)")
    let third = try sql(
      database, "SELECT storage_key FROM thumbs.variants WHERE job_id = (SELECT max(id) FROM thumbs.jobs)"
    ).rows.compactMap { $0[0] }
    #expect(Set(third) == Set(distinct.keys))
    let secondMetrics = try #require(Metrics(HTTPProbe.get(secondPort, "/metrics")))
    #expect(secondMetrics.value("thumbd_storage_objects_total", ["result": "already_stored"]) == 4)
    #expect(secondMetrics.value("thumbd_storage_objects_total", ["result": "uploaded"]) ?? 0 == 0)
    #expect(secondMetrics.value("thumbd_storage_upload_bytes_total") ?? 0 == 0)
    second.send(SIGTERM)
    #expect(await second.waitForExit(timeout: 15) == 0, "log:\n\(second.log)")
    withExtendedLifetime(origin) {}
  }
}
