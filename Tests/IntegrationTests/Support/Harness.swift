import Blocking
import Fetch
import Foundation
import Logging
import Queue
import Testing
import ThumbCore
import Worker

/// The PostgreSQL that `make test` starts (scripts/with-postgres.sh). Each suite gets a database of its
/// own, freshly migrated, so tests never see each other's jobs.
enum TestDatabase {
  static let adminURL = ProcessInfo.processInfo.environment["THUMBD_TEST_DATABASE_URL"]
  static let skipReason = "THUMBD_TEST_DATABASE_URL is not set: run the suite with `make test`"

  /// Tests/IntegrationTests/Support/Harness.swift → the repository.
  static let repoRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent()
    .deletingLastPathComponent()
    .deletingLastPathComponent()

  /// Creates an empty database, applies the migrations (those of `migrations`, by default the
  /// repository's) and returns its URL.
  static func create(migrations: URL? = nil) throws -> String {
    guard let adminURL else { throw CocoaError(.featureUnsupported) }
    let name = "thumbd_test_\(UInt32.random(in: 0...UInt32.max))"
    let admin = try PostgresConnection(conninfo: adminURL)
    defer { admin.close() }
    try admin.execute(script: "CREATE DATABASE \(name)")
    guard var components = URLComponents(string: adminURL) else { throw CocoaError(.featureUnsupported) }
    components.path = "/\(name)"
    let url = components.string!
    let connection = try PostgresConnection(conninfo: url)
    defer { connection.close() }
    _ = try Migrator(directory: migrations ?? repoRoot.appendingPathComponent("migrations")).apply(
      on: connection)
    return url
  }
}

/// A program a test starts beside itself (an origin, a proxy, a pooler), killed and reaped when the
/// test lets go of it.
final class HelperProcess: @unchecked Sendable {
  let process = Process()
  private let stdout = Pipe()

  init(_ executable: String, _ arguments: [String], quiet: Bool = false) throws {
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.standardOutput = quiet ? FileHandle.nullDevice : stdout
    if quiet { process.standardError = FileHandle.nullDevice }
    try process.run()
  }

  /// The port from the program's first line, `PORT <n>` (origin.py and s3-faults.py print it once
  /// they listen).
  func announcedPort() throws -> Int {
    var line = Data()
    while !line.contains(UInt8(ascii: "\n")) {
      let chunk = stdout.fileHandleForReading.availableData
      if chunk.isEmpty { break }
      line.append(chunk)
    }
    guard let text = String(data: line, encoding: .utf8), text.hasPrefix("PORT "),
      let port = Int(text.dropFirst(5).trimmingCharacters(in: .whitespacesAndNewlines))
    else { throw CocoaError(.fileReadCorruptFile) }
    return port
  }

  deinit {
    // SIGKILL and a direct waitpid: Foundation's waitUntilExit spins a run loop that can stall off the
    // main thread, and a helper's server threads may outlive a polite SIGTERM.
    let pid = process.processIdentifier
    kill(pid, SIGKILL)
    var status: Int32 = 0
    _ = waitpid(pid, &status, 0)
  }
}

/// Tests/Support/origin.py on a free loopback port, serving `root` under /files/ plus fault routes.
final class TestOrigin: @unchecked Sendable {
  let helper: HelperProcess
  let port: Int
  let root: URL

  let scheme: String

  /// `tls`: HTTPS only, with a self-signed certificate made here by openssl (clients must refuse it).
  init(root: URL, tls: Bool = false) throws {
    self.root = root
    scheme = tls ? "https" : "http"
    var arguments = [
      "python3", TestDatabase.repoRoot.appendingPathComponent("Tests/Support/origin.py").path, "--root",
      root.path,
    ]
    if tls {
      let folder = try makeTemporaryDirectory()
      let (cert, key) = (
        folder.appendingPathComponent("cert.pem").path, folder.appendingPathComponent("key.pem").path
      )
      let openssl = Process()
      openssl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
      openssl.arguments = [
        "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days",
        "1",
        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
      ]
      openssl.standardError = FileHandle.nullDevice
      try openssl.run()
      openssl.waitUntilExit()
      guard openssl.terminationStatus == 0 else { throw CocoaError(.fileWriteUnknown) }
      arguments += ["--tls-cert", cert, "--tls-key", key]
    }
    helper = try HelperProcess("/usr/bin/env", arguments)
    port = try helper.announcedPort()
  }

  func url(_ path: String) -> String { "\(scheme)://127.0.0.1:\(port)\(path)" }
}

func makeTemporaryDirectory() throws -> URL {
  let url = FileManager.default.temporaryDirectory.appendingPathComponent("thumbd-test-\(UUID().uuidString)")
  try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
  return url
}

/// A worker that drains the queue of `databaseURL` into `storage`, allowed to fetch from loopback.
func drainQueue(
  databaseURL: String, storage: URL, concurrency: Int = 2, configure: (inout WorkerConfig) -> Void = { _ in }
)
  async throws -> WorkerTotals
{
  var config = WorkerConfig(databaseURL: databaseURL, storageURL: "file://\(storage.path)")
  config.concurrency = concurrency
  config.drain = true
  config.addressPolicy = try AddressPolicy(allowList: "127.0.0.1")
  config.fetch.retry.backoff.first = .milliseconds(50)
  configure(&config)
  var logger = Logger(label: "thumbd.test")
  logger.logLevel = .warning
  return try await Worker(config: config, logger: logger).run()
}

/// Runs one SQL statement on a short-lived connection.
@discardableResult
func sql(_ url: String, _ statement: String, _ parameters: [String?] = []) throws -> QueryResult {
  let connection = try PostgresConnection(conninfo: url)
  defer { connection.close() }
  return try connection.query(statement, parameters)
}

extension TestOrigin {
  /// How many GETs the origin answered for `path` (its /_count endpoint, which does not count itself).
  func requestCount(_ path: String) async throws -> Int {
    try await count(at: "/_count" + path)
  }

  /// The count of GETs for `path` once it reaches `count`, or whatever it is after `timeout` seconds:
  /// for a GET that another task sends and that a loaded machine may be slow to deliver.
  func requestCount(_ path: String, reaching count: Int, timeout: Double = 10) async throws -> Int {
    let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
    while true {
      let seen = try await requestCount(path)
      if seen >= count || ContinuousClock.now > deadline { return seen }
      try await Task.sleep(for: .milliseconds(20))
    }
  }

  /// How many TCP connections the origin accepted so far.
  func connectionCount() async throws -> Int {
    try await count(at: "/_connections")
  }

  /// A number the origin's control endpoint at `path` answers, under `key`.
  func count(at path: String, key: String = "count") async throws -> Int {
    let fetcher = Fetcher(limits: FetchLimits(), addressPolicy: try AddressPolicy(allowList: "127.0.0.1"))
    let body = try await fetcher.fetch(url(path)).content.head
    let json = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]
    return json?[key] as? Int ?? -1
  }
}

extension QueryResult {
  /// The `id` column as numbers, for tests' own statements (`SELECT thumbs.enqueue(...) AS id`).
  var ids: [Int64] {
    get throws(PostgresError) { try namedRows.map { row throws(PostgresError) in try row.int64("id") } }
  }
}
