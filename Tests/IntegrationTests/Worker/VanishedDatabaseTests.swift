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
      await eventually(timeout: 20) {
        worker.log.components(separatedBy: "database answers again").count - 1 == 1
      }, "log:\n\(worker.log)")

    worker.send(SIGTERM)
    #expect(await worker.waitForExit(timeout: 40) == 0, "log:\n\(worker.log)")
  }

  /// A database that hangs for 20 s without closing anything (the freeze proxy) and comes back, under a
  /// fleet of two workers with their default settings: neither exits, and the jobs enqueued meanwhile
  /// finish within 10 s of the return.
  @Test func aFleetResumesWithinTenSecondsOfAFrozenDatabasesReturn() async throws {
    let frozen = try FrozenDatabase()
    let workers = try (0..<2).map { _ in
      try WorkerProcess(
        databaseURL: frozen.url, storage: frozen.fixture.storage, settings: ["THUMBD_POLL_INTERVAL": "600"])
    }
    defer { workers.forEach { $0.send(SIGKILL) } }
    let logs = { workers.map(\.log).joined(separator: "\n---\n") }
    let first = try (0..<4).map { try frozen.enqueue("before-\($0)") }
    #expect(try await eventually(timeout: 30) { try first.allSatisfy(frozen.succeeded) }, "\(logs())")

    try frozen.freeze()
    let during = try (0..<4).map { try frozen.enqueue("during-\($0)") }
    try await Task.sleep(for: .seconds(20))
    #expect(try !during.contains(where: frozen.succeeded), "nothing passes while the database is frozen")
    #expect(workers.allSatisfy { !$0.hasExited }, "no worker exits while the database is frozen")
    try frozen.thaw()
    let back = ContinuousClock.now
    #expect(try await eventually(timeout: 30) { try during.allSatisfy(frozen.succeeded) }, "\(logs())")
    let took = back.duration(to: .now)
    #expect(took < .seconds(10), "resumed \(took) after the database came back")
    print("frozen database, two workers: the jobs enqueued meanwhile finished \(took) after the return")
    for worker in workers { worker.send(SIGTERM) }
    for worker in workers { #expect(await worker.waitForExit(timeout: 40) == 0, "log:\n\(worker.log)") }
  }

  /// A database frozen for longer than its statements' deadlines: the worker gives them up (rather than
  /// waiting for ever on a connection the kernel keeps alive), says once that the database is lost,
  /// is not ready meanwhile, and is ready and working again once the database is back.
  @Test func aLongFreezeCostsTheStatementsTheirDeadlinesAndReadiness() async throws {
    let frozen = try FrozenDatabase()
    let worker = try WorkerProcess(
      databaseURL: frozen.url, storage: frozen.fixture.storage,
      settings: ["THUMBD_POLL_INTERVAL": "1", "THUMBD_DATABASE_TIMEOUT": "2", "THUMBD_LOG_FORMAT": "text"])
    defer { worker.send(SIGKILL) }
    let port = try #require(await worker.httpPort())
    let first = try frozen.enqueue("before")
    #expect(try await eventually(timeout: 30) { try frozen.succeeded(first) }, "log:\n\(worker.log)")
    #expect(await eventually(timeout: 15) { HTTPProbe.get(port, "/readyz").status == 200 })

    try frozen.freeze()
    let frozenAt = ContinuousClock.now
    // Quick statements (the lease, polled every second) give up after twice the bound: 4 s.
    let notReady = await eventually(timeout: 20) { HTTPProbe.get(port, "/readyz").status == 503 }
    let noticed = frozenAt.duration(to: .now)
    #expect(notReady, "not ready while the database does not answer; log:\n\(worker.log)")
    #expect(noticed < .seconds(12), "noticed \(noticed) after the freeze")
    #expect(worker.log.contains("did not answer"), "log:\n\(worker.log)")
    let second = try frozen.enqueue("during")
    try await Task.sleep(for: .seconds(8))
    #expect(!worker.hasExited)
    try frozen.thaw()
    let back = ContinuousClock.now
    #expect(try await eventually(timeout: 30) { try frozen.succeeded(second) }, "log:\n\(worker.log)")
    #expect(back.duration(to: .now) < .seconds(10), "resumed \(back.duration(to: .now)) after the return")
    #expect(await eventually(timeout: 15) { HTTPProbe.get(port, "/readyz").status == 200 })
    let log = worker.log
    #expect(log.components(separatedBy: "database connection lost").count - 1 == 1, "log:\n\(log)")
    #expect(log.components(separatedBy: "database answers again").count - 1 == 1, "log:\n\(log)")
    let reclaimed = log.contains("handed back jobs leased by a statement whose answer was lost")
    print(
      "long freeze: not ready \(noticed) after the freeze, working \(back.duration(to: .now)) after the return"
        + (reclaimed ? "; a lease run late by the database was handed back" : ""))
    worker.send(SIGTERM)
    #expect(await worker.waitForExit(timeout: 40) == 0, "log:\n\(worker.log)")
  }

  /// A worker that starts while its database's host is gone: it neither exits nor hangs, is not ready,
  /// and once the host is back it becomes ready and works.
  @Test(.enabled(if: VanishingLink.available, Comment(rawValue: VanishingLink.skipReason)))
  func aWorkerStartedWhileTheDatabaseIsGoneWaitsForIt() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    var components = try #require(URLComponents(string: database))
    let link = try VanishingLink(target: components.host ?? "127.0.0.1", port: components.port ?? 5432)
    let parts = link.address.split(separator: ":")
    (components.host, components.port) = (String(parts[0]), Int(parts[1]))
    try link.cut()
    let worker = try WorkerProcess(
      databaseURL: try #require(components.string), storage: fixture.storage,
      settings: ["THUMBD_POLL_INTERVAL": "600", "THUMBD_DATABASE_TIMEOUT": "3"])
    defer { worker.send(SIGKILL) }
    let port = try #require(await worker.httpPort(timeout: 30), "log:\n\(worker.log)")
    try await Task.sleep(for: .seconds(8))
    #expect(!worker.hasExited, "log:\n\(worker.log)")
    #expect(HTTPProbe.get(port, "/readyz").status == 503)
    let id = try sql(database, "SELECT thumbs.enqueue($1)", [fixture.origin.url("/files/photo.jpg")]).rows[0][
      0]!
    try link.restore()
    let back = ContinuousClock.now
    #expect(
      try await eventually(timeout: 40) {
        try sql(database, "SELECT state FROM thumbs.jobs WHERE id = $1::bigint", [id]).rows.first?[0]
          == "succeeded"
      }, "log:\n\(worker.log)")
    print("start-up without a database: the job finished \(back.duration(to: .now)) after the link came back")
    #expect(HTTPProbe.get(port, "/readyz").status == 200)
    worker.send(SIGTERM)
    #expect(await worker.waitForExit(timeout: 40) == 0, "log:\n\(worker.log)")
  }
}

/// A test database behind the freeze proxy: `freeze()` makes it hang without closing anything,
/// `thaw()` brings it back.
private struct FrozenDatabase {
  let database: String
  let fixture: QueueFixture
  let url: String
  private let flag: URL
  private let proxy: HelperProcess

  init() throws {
    database = try TestDatabase.create()
    fixture = try QueueFixture()
    var components = try #require(URLComponents(string: database))
    flag = fixture.storage.deletingLastPathComponent().appendingPathComponent("freeze")
    proxy = try HelperProcess(
      "/usr/bin/env",
      [
        "python3", TestDatabase.repoRoot.appendingPathComponent("Tests/Support/freeze-proxy.py").path,
        "--target", "\(components.host ?? "127.0.0.1"):\(components.port ?? 5432)", "--freeze-file",
        flag.path,
      ])
    components.port = try proxy.announcedPort()
    url = try #require(components.string)
  }

  func freeze() throws { try Data().write(to: flag) }
  func thaw() throws { try FileManager.default.removeItem(at: flag) }

  func enqueue(_ name: String) throws -> String {
    try sql(database, "SELECT thumbs.enqueue($1)", [fixture.origin.url("/files/photo.jpg?\(name)")]).rows[0][
      0]!
  }

  func succeeded(_ id: String) throws -> Bool {
    try sql(database, "SELECT state FROM thumbs.jobs WHERE id = $1::bigint", [id]).rows.first?[0]
      == "succeeded"
  }
}
