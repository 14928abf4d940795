import Foundation
import TestSupport
import Testing

/// A failover in miniature: the worker's URL names two hosts (`primary,standby`), the primary reached
/// through a link that is cut without a word (VanishingLink: its host vanished), the standby not
/// listening until it is "promoted" a moment after the cut (a proxy to the same database starts on its
/// port). With its default settings the worker notices the vanished host, reaches the standby, takes the
/// job enqueued meanwhile (LISTEN included: polling is off), and stops cleanly afterwards. And a
/// database that freezes without closing anything, then comes back.
@Suite(
  .serialized,
  .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)),
  .enabled(if: WorkerProcess.binary != nil, Comment(rawValue: WorkerProcess.skipReason)))
struct VanishedDatabaseTests {
  @Test(.enabled(if: VanishingLink.available, Comment(rawValue: VanishingLink.skipReason)))
  func aWorkerReachesThePromotedStandbyWithinThirtySecondsOfThePromotion() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    let components = try #require(URLComponents(string: database))
    let (host, port) = (components.host ?? "127.0.0.1", components.port ?? 5432)
    let link = try VanishingLink(target: host, port: port)
    let standbyPort = try #require(freeLoopbackPort())
    let user = components.user ?? "postgres"
    let url = "postgresql://\(user)@\(link.address),127.0.0.1:\(standbyPort)\(components.path)"
    let worker = try WorkerProcess(
      databaseURL: url, storage: fixture.storage,
      settings: ["THUMBD_POLL_INTERVAL": "600", "THUMBD_LOG_FORMAT": "text"])
    defer { worker.send(SIGKILL) }

    func enqueue(_ name: String) throws -> String {
      try sql(database, "SELECT thumbs.enqueue($1)", [fixture.origin.url("/files/photo.jpg?\(name)")]).rows[
        0][0]!
    }
    func succeeded(_ id: String) throws -> Bool {
      try sql(database, "SELECT state FROM thumbs.jobs WHERE id = $1::bigint", [id]).rows.first?[0]
        == "succeeded"
    }
    let first = try enqueue("before")
    #expect(try await eventually(timeout: 30) { try succeeded(first) }, "log:\n\(worker.log)")

    // The primary's host vanishes; a few seconds later the standby is promoted, and work arrives.
    try link.cut()
    try await Task.sleep(for: .seconds(3))
    let proxy = TestDatabase.repoRoot.appendingPathComponent("Tests/Support/freeze-proxy.py").path
    let standby = try HelperProcess(
      "/usr/bin/env", ["python3", proxy, "--port", "\(standbyPort)", "--target", "\(host):\(port)"])
    _ = try standby.announcedPort()
    let promoted = ContinuousClock.now
    let second = try enqueue("after")
    let reached = try await eventually(timeout: 60) { try succeeded(second) }
    let took = promoted.duration(to: .now)
    #expect(reached, "log:\n\(worker.log)")
    #expect(took < .seconds(30), "the first job on the promoted standby finished \(took) after the promotion")
    print("vanished primary: the first job on the standby finished \(took) after the promotion")
    // Said once each: lost, and back.
    let log = worker.log
    #expect(log.components(separatedBy: "database connection lost").count - 1 == 1, "log:\n\(log)")
    #expect(
      try await eventually(timeout: 20) {
        worker.log.components(separatedBy: "database answers again").count - 1 == 1
      }, "log:\n\(worker.log)")

    worker.send(SIGTERM)
    #expect(await worker.waitForExit(timeout: 40) == 0, "log:\n\(worker.log)")
  }

  /// A database that hangs for 20 s without closing anything (the freeze proxy) and comes back: the
  /// worker neither exits nor gives up the connections (their kernels still answer), and takes the job
  /// enqueued meanwhile within 10 s of the return.
  @Test func aWorkerResumesWithinTenSecondsOfAFrozenDatabasesReturn() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    var components = try #require(URLComponents(string: database))
    let freeze = fixture.storage.deletingLastPathComponent().appendingPathComponent("freeze")
    let proxy = try HelperProcess(
      "/usr/bin/env",
      [
        "python3", TestDatabase.repoRoot.appendingPathComponent("Tests/Support/freeze-proxy.py").path,
        "--target", "\(components.host ?? "127.0.0.1"):\(components.port ?? 5432)", "--freeze-file",
        freeze.path,
      ])
    components.port = try proxy.announcedPort()
    let worker = try WorkerProcess(
      databaseURL: try #require(components.string), storage: fixture.storage,
      settings: ["THUMBD_POLL_INTERVAL": "600"])
    defer { worker.send(SIGKILL) }
    func enqueue(_ name: String) throws -> String {
      try sql(database, "SELECT thumbs.enqueue($1)", [fixture.origin.url("/files/photo.jpg?\(name)")]).rows[
        0][0]!
    }
    func succeeded(_ id: String) throws -> Bool {
      try sql(database, "SELECT state FROM thumbs.jobs WHERE id = $1::bigint", [id]).rows.first?[0]
        == "succeeded"
    }
    let first = try enqueue("before")
    #expect(try await eventually(timeout: 30) { try succeeded(first) }, "log:\n\(worker.log)")

    try Data().write(to: freeze)
    let second = try enqueue("during")
    try await Task.sleep(for: .seconds(20))
    #expect(try !succeeded(second), "nothing passes while the database is frozen")
    try FileManager.default.removeItem(at: freeze)
    let back = ContinuousClock.now
    #expect(try await eventually(timeout: 30) { try succeeded(second) }, "log:\n\(worker.log)")
    let took = back.duration(to: .now)
    #expect(took < .seconds(10), "resumed \(took) after the database came back")
    print("frozen database: the job enqueued meanwhile finished \(took) after the return")
    worker.send(SIGTERM)
    #expect(await worker.waitForExit(timeout: 40) == 0, "log:\n\(worker.log)")
  }
}
