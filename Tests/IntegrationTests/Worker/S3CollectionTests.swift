import Foundation
import Storage
import TestSupport
import Testing
import ThumbCore

/// Collection by `thumbd worker` processes writing to S3 (moto with signatures checked, behind the fault
/// proxy): a storage that refuses deletes for a while keeps the objects marked and completions naming
/// them refused, then everything goes once it deletes again; a worker killed while it deletes leaves
/// its claim to another worker; `thumbd gc` finds and deletes an orphan.
@Suite(
  .serialized,
  .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)),
  .enabled(if: S3TestServer.current != nil, Comment(rawValue: S3TestServer.skipReason)),
  .enabled(if: WorkerProcess.binary != nil, Comment(rawValue: WorkerProcess.skipReason)))
struct S3CollectionTests {
  let server = S3TestServer.current!
  let prefix = "gc-tests/\(UUID().uuidString.lowercased())"

  struct Fixture {
    let database: String
    let origin: TestOrigin
    let folder: URL
    let proxy: S3FaultProxy
  }

  func fixture() throws -> Fixture {
    let root = try makeTemporaryDirectory()
    let photo = try makeTestJPEG(width: 1000, height: 750)
    for name in ["a", "b", "c"] { try Data(photo).write(to: root.appendingPathComponent("\(name).jpg")) }
    return Fixture(
      database: try TestDatabase.create(), origin: try TestOrigin(root: root), folder: root,
      proxy: try S3FaultProxy(upstream: server.endpoint))
  }

  func worker(_ fixture: Fixture, _ extra: [String: String] = [:]) throws -> WorkerProcess {
    var settings = [
      "THUMBD_STORAGE": "s3://\(server.bucket)/\(prefix)", "THUMBD_S3_ENDPOINT": fixture.proxy.endpoint,
      "THUMBD_S3_PATH_STYLE": "1", "AWS_ACCESS_KEY_ID": server.accessKey,
      "AWS_SECRET_ACCESS_KEY": server.secretKey, "THUMBD_ERASE_GRACE": "0", "THUMBD_GC_INTERVAL": "1",
      "THUMBD_CONCURRENCY": "2",
    ]
    for (key, value) in extra { settings[key] = value }
    let storage = fixture.folder.appendingPathComponent("unused-\(UUID().uuidString)")
    return try WorkerProcess(databaseURL: fixture.database, storage: storage, settings: settings)
  }

  func enqueue(_ fixture: Fixture, _ name: String) throws -> String {
    try sql(
      fixture.database, "SELECT thumbs.enqueue($1, external_id => $2)",
      [fixture.origin.url("/files/\(name).jpg"), "photo-\(name)"]
    ).rows[0][0]!
  }

  func state(_ fixture: Fixture, _ job: String) throws -> String? {
    try sql(fixture.database, "SELECT state FROM thumbs.jobs WHERE id = $1::bigint", [job]).rows.first?[0]
      ?? nil
  }

  /// Whether the object is in the bucket, asked of the server itself (not through the proxy).
  func exists(_ key: String) throws -> Bool {
    try server.download("\(prefix)/\(key)").status == 200
  }

  func keys(_ fixture: Fixture) throws -> [String] {
    try sql(fixture.database, "SELECT DISTINCT storage_key FROM thumbs.variants ORDER BY 1").rows.map {
      $0[0]!
    }
  }

  /// A photo forgotten while its thumbnails are being uploaded (each PUT held 4 s by the proxy, the lease 2 s): the job
  /// is abandoned or its success refused, but its uploads finish; they are handed to collection, which
  /// deletes them. Nothing stays in the bucket that nothing names.
  @Test func aPhotoForgottenWhileItsThumbnailsUploadLeavesNothingInStorage() async throws {
    let fixture = try fixture()
    try fixture.proxy.inject(["delay": 4, "method": "PUT", "path": ".jpg", "count": 4])
    // A short lease: a heartbeat finds the job forgotten while its uploads are held.
    let worker = try worker(fixture, ["THUMBD_LEASE_TTL": "2"])
    defer { worker.send(SIGKILL) }
    let job = try enqueue(fixture, "a")
    #expect(
      try await eventually(timeout: 30) { try !fixture.proxy.requests("PUT", ".jpg").isEmpty },
      "an upload began")
    #expect(try sql(fixture.database, "SELECT thumbs.forget_external('photo-a')").rows[0][0] == "1")
    #expect(try state(fixture, job) == "forgotten")
    // Every upload the worker started ends (held, then forwarded): the keys it stored.
    #expect(
      try await eventually(timeout: 40) {
        try fixture.proxy.requests("PUT", ".jpg").filter { $0.outcome.hasPrefix("forwarded") }.count == 4
      }, "log:\n\(worker.log)")
    let uploaded = try fixture.proxy.requests("PUT", ".jpg").compactMap { seen -> String? in
      guard let range = seen.path.range(of: "\(prefix)/") else { return nil }
      return String(seen.path[range.upperBound...].prefix { $0 != "?" })
    }
    #expect(uploaded.count == 4)
    #expect(
      try await eventually(timeout: 30) { try uploaded.allSatisfy { try !exists($0) } },
      "collection deleted what the forgotten job stored; log:\n\(worker.log)")
    #expect(try keys(fixture).isEmpty, "no variant rows")
  }

  /// A worker frozen while its uploads are on their way (held by the proxy) loses its lease; another
  /// worker finishes the job, the photo is forgotten and its objects collected; then the frozen worker
  /// wakes, its held uploads land, storing the objects again, and it finds its lease gone. What it
  /// stored is handed to collection and deleted: nothing stays that nothing names.
  @Test func aFrozenWorkersUploadsThatLandAfterCollectionAreCollectedToo() async throws {
    let fixture = try fixture()
    try fixture.proxy.inject(["delay": 12, "method": "PUT", "path": ".jpg", "count": 4])
    let zombie = try worker(fixture, ["THUMBD_LEASE_TTL": "2", "THUMBD_GC_INTERVAL": "0"])
    defer { zombie.send(SIGKILL) }
    let job = try enqueue(fixture, "a")
    #expect(try await eventually(timeout: 30) { try fixture.proxy.requests("PUT", ".jpg").count == 4 })
    zombie.send(SIGSTOP)
    try await Task.sleep(for: .seconds(2.5))  // past the lease
    let rescuer = try worker(fixture)
    defer { rescuer.send(SIGKILL) }
    #expect(
      try await eventually(timeout: 8) { try state(fixture, job) == "succeeded" }, "log:\n\(rescuer.log)")
    let stored = try keys(fixture)
    #expect(stored.count == 4)
    #expect(try sql(fixture.database, "SELECT thumbs.forget_external('photo-a')").rows[0][0] == "1")
    #expect(try await eventually(timeout: 8) { try stored.allSatisfy { try !exists($0) } }, "collected once")
    zombie.send(SIGCONT)
    // The held uploads land (their bodies may have waited for the zombie to wake), storing the objects
    // again after collection deleted them.
    #expect(
      try await eventually(timeout: 30) {
        try fixture.proxy.requests("PUT", ".jpg").prefix(4).allSatisfy { $0.outcome.hasPrefix("forwarded") }
      })
    #expect(
      try await eventually(timeout: 30) { try stored.allSatisfy { try !exists($0) } },
      "collected again; zombie:\n\(zombie.log)\nrescuer:\n\(rescuer.log)")
  }

  @Test func deletesRefusedForAWhileKeepObjectsMarkedAndCompletionsRefusedThenEverythingGoes() async throws {
    let fixture = try fixture()
    let worker = try worker(fixture)
    defer { worker.send(SIGKILL) }
    let a = try enqueue(fixture, "a")
    let b = try enqueue(fixture, "b")
    #expect(
      try await eventually(timeout: 30) {
        try state(fixture, a) == "succeeded" && state(fixture, b) == "succeeded"
      })
    let shared = try keys(fixture)
    #expect(shared.count == 4, "one set of objects for the two identical photos")

    // The storage refuses every delete from now on.
    try fixture.proxy.inject(["status": 403, "code": "AccessDenied", "method": "DELETE", "count": -1])
    // Both in one transaction: a collection pass between two statements would find photo-a's objects
    // still named by photo-b and end its erasure at once, with nothing to delete.
    #expect(
      try sql(
        fixture.database, "SELECT thumbs.forget_external('photo-a') + thumbs.forget_external('photo-b')"
      ).rows[0][0] == "2")
    #expect(
      try await eventually(timeout: 30) {
        try sql(
          fixture.database,
          "SELECT count(*) FROM thumbs.gc_objects WHERE state = 'deleting' AND last_error LIKE '%AccessDenied%'"
        ).rows[0][0] == "4"
      }, "every object stays marked, with the storage's answer")
    #expect(try shared.allSatisfy { try exists($0) }, "nothing was deleted")
    #expect(worker.log.contains("s3:DeleteObject"), "the log says which permission is missing")
    #expect(try sql(fixture.database, "SELECT count(*) FROM thumbs.erasures").rows[0][0] == "2", "not done")

    // A third copy of the photo renders the same objects while they are marked: its completion is refused,
    // and it goes back to the queue without using an attempt.
    let c = try enqueue(fixture, "c")
    #expect(
      try await eventually(timeout: 30) {
        try sql(
          fixture.database,
          "SELECT count(*) FROM thumbs.job_attempts WHERE job_id = $1::bigint AND error LIKE '%being deleted by collection%'",
          [c]
        ).rows[0][0] != "0"
      })
    #expect(
      try sql(fixture.database, "SELECT attempts FROM thumbs.jobs WHERE id = $1::bigint", [c]).rows[0][0]
        != "5")

    // The storage deletes again: the marked objects go, the erasures end in their events, and the third
    // photo, leased after the deletes, stores its objects again and succeeds.
    try fixture.proxy.clear()
    #expect(
      try await eventually(timeout: 60) {
        try sql(fixture.database, "SELECT count(*) FROM thumbs.erasures").rows[0][0] == "0"
      })
    let events = try sql(
      fixture.database,
      "SELECT external_id, jsonb_array_length(payload->'storage_keys') FROM thumbs.events WHERE kind = 'forgotten' ORDER BY external_id"
    ).rows
    #expect(events == [["photo-a", "4"], ["photo-b", "4"]])
    #expect(try await eventually(timeout: 60) { try state(fixture, c) == "succeeded" })
    #expect(try keys(fixture) == shared)
    #expect(try shared.allSatisfy { try exists($0) }, "what the third photo names is in storage")
    #expect(try fixture.proxy.requests("DELETE").count >= 4)
  }

  @Test func aWorkerKilledWhileItDeletesLeavesItsClaimToAnother() async throws {
    let fixture = try fixture()
    let first = try worker(fixture, ["THUMBD_LEASE_TTL": "5"])
    defer { first.send(SIGKILL) }
    let a = try enqueue(fixture, "a")
    #expect(try await eventually(timeout: 30) { try state(fixture, a) == "succeeded" })
    let stored = try keys(fixture)
    // Deletes hang: the collector is killed with its claim in flight.
    try fixture.proxy.inject(["delay": 30, "method": "DELETE", "count": -1])
    #expect(try sql(fixture.database, "SELECT thumbs.forget_external('photo-a')").rows[0][0] == "1")
    #expect(
      try await eventually(timeout: 30) {
        try sql(fixture.database, "SELECT count(*) FROM thumbs.gc_objects WHERE claimed_by IS NOT NULL").rows[
          0][0]
          == "4"
      })
    first.send(SIGKILL)
    _ = await first.waitForExit(timeout: 10)
    try fixture.proxy.clear()
    #expect(try stored.allSatisfy { try exists($0) })
    // On S3 a claim lasts twice the 30 s request deadline plus 10 s, however short the lease: a pass
    // starts no delete in its last 35 s, so no delete outlives its claim.
    #expect(
      try sql(
        fixture.database,
        "SELECT count(*) FROM thumbs.gc_objects WHERE claim_expires_at > now() + interval '70 seconds' "
          + "OR claim_expires_at < now() + interval '50 seconds'"
      ).rows[0][0] == "0", "every claim runs out about 70 s after it was taken")
    // The claim runs out (made due here rather than waited for); another worker deletes them.
    try sql(
      fixture.database, "UPDATE thumbs.gc_objects SET claim_expires_at = now() WHERE claimed_by IS NOT NULL")
    let second = try worker(fixture)
    defer { second.send(SIGKILL) }
    #expect(
      try await eventually(timeout: 60) {
        try sql(fixture.database, "SELECT count(*) FROM thumbs.erasures").rows[0][0] == "0"
      })
    #expect(try stored.allSatisfy { try !exists($0) })
    #expect(
      try sql(fixture.database, "SELECT count(*) FROM thumbs.gc_objects WHERE state IS NOT NULL").rows[0][0]
        == "0")
  }

  /// An edited photo (its external id enqueued with a new original): once the new thumbnails are
  /// current, the old ones leave the bucket within the grace (0 here) plus a pass; the objects left are
  /// exactly the current ones, and the job history still lists both jobs' variants.
  @Test func anEditedPhotoLeavesExactlyItsCurrentObjectsInTheBucket() async throws {
    let fixture = try fixture()
    try Data(try makeTestJPEG(width: 900, height: 700)).write(
      to: fixture.folder.appendingPathComponent("edited.jpg"))
    let worker = try worker(fixture)
    defer { worker.send(SIGKILL) }
    let first = try enqueue(fixture, "a")
    #expect(try await eventually(timeout: 30) { try state(fixture, first) == "succeeded" })
    let old = Set(try keys(fixture))
    let second = try sql(
      fixture.database, "SELECT thumbs.enqueue($1, external_id => 'photo-a')",
      [fixture.origin.url("/files/edited.jpg")]
    ).rows[0][0]!
    #expect(try await eventually(timeout: 30) { try state(fixture, second) == "succeeded" })
    let current = Set(
      try sql(fixture.database, "SELECT storage_key FROM thumbs.current_variants").rows.map { $0[0]! })
    #expect(old.count == 4 && current.count == 4 && old.isDisjoint(with: current), "\(old) \(current)")
    #expect(
      try await eventually(timeout: 30) { try old.allSatisfy { try !exists($0) } },
      "the edited photo's old thumbnails left the bucket; log:\n\(worker.log)")
    #expect(try current.allSatisfy { try exists($0) })
    #expect(try sql(fixture.database, "SELECT count(*) FROM thumbs.variants").rows == [["8"]])
    #expect(try Set(keys(fixture)) == old.union(current), "the history names both")
  }

  @Test func gcFindsAnOrphanAndDeletesItWhileNamedObjectsStay() async throws {
    let fixture = try fixture()
    let worker = try worker(fixture, ["THUMBD_GC_INTERVAL": "0"])
    defer { worker.send(SIGKILL) }
    let a = try enqueue(fixture, "a")
    #expect(try await eventually(timeout: 30) { try state(fixture, a) == "succeeded" })
    let named = try keys(fixture)
    // An upload no row recorded (a worker that died between its upload and its commit).
    let orphan = contentAddressedObject()
    let store = try server.store(prefix: prefix)
    _ = try await store.put(key: orphan.key, bytes: orphan.bytes, contentType: "image/jpeg")
    let options = [
      "--database-url", fixture.database, "--storage", "s3://\(server.bucket)/\(prefix)", "--s3-endpoint",
      server.endpoint, "--s3-path-style", "--erase-grace", "0",
    ]
    let environment = [
      "AWS_ACCESS_KEY_ID": server.accessKey, "AWS_SECRET_ACCESS_KEY": server.secretKey,
      "PATH": "/usr/bin:/bin",
    ]
    let binary = try #require(WorkerProcess.binary)
    let dry = try runProgram(binary.path, ["gc", "--dry-run"] + options, environment: environment)
    #expect(dry.code == 0, "\(dry.output)")
    #expect(dry.output.contains(orphan.key) && dry.output.contains("orphan"), "\(dry.output)")
    #expect(named.allSatisfy { !dry.output.contains($0) }, "named objects are not listed")
    #expect(try exists(orphan.key), "a dry run deletes nothing")

    let wet = try runProgram(binary.path, ["gc"] + options, environment: environment)
    #expect(wet.code == 0, "\(wet.output)")
    #expect(wet.output.contains("deleted 1"), "\(wet.output)")
    #expect(try !exists(orphan.key))
    #expect(try named.allSatisfy { try exists($0) })
  }
}
