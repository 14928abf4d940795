import Foundation
import Queue
import Testing

/// Workers through a real PgBouncer (Debian's, 1.18) in transaction mode, configured from
/// deploy/pgbouncer/pgbouncer.ini: with `--prepared-statements off` they finish every job, and however
/// many of them connect, PostgreSQL sees no more server connections than the pool holds.
@Suite(
  .serialized,
  .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)),
  .enabled(
    if: FileManager.default.isExecutableFile(atPath: "/usr/sbin/pgbouncer"),
    "pgbouncer is not installed: run scripts/install-deps.sh"))
struct PgBouncerTests {
  /// A pgbouncer process on a loopback port, from the deploy file with the test's database, trust
  /// authentication and a pool of `poolSize`. Runs as the postgres user (pgbouncer refuses root).
  final class Bouncer: @unchecked Sendable {
    let helper: HelperProcess
    let url: String

    init(database: String, poolSize: Int) throws {
      let target = try #require(URLComponents(string: database))
      let folder = try makeTemporaryDirectory()
      let port = try #require(freeLoopbackPort())
      let name = String(target.path.dropFirst())
      let overrides = [
        "listen_addr": "127.0.0.1", "listen_port": "\(port)", "auth_type": "trust",
        "auth_file": folder.appendingPathComponent("userlist.txt").path,
        "logfile": folder.appendingPathComponent("pgbouncer.log").path,
        "pidfile": folder.appendingPathComponent("pgbouncer.pid").path, "unix_socket_dir": "",
        "default_pool_size": "\(poolSize)", "reserve_pool_size": "0",
      ]
      let deployed = try String(
        contentsOf: TestDatabase.repoRoot.appendingPathComponent("deploy/pgbouncer/pgbouncer.ini"),
        encoding: .utf8)
      var lines: [String] = []
      var section = ""
      for line in deployed.split(separator: "\n", omittingEmptySubsequences: false) {
        let text = String(line)
        if text.hasPrefix("[") {
          section = text
          lines.append(text)
          if section == "[databases]" {
            lines.append(
              "\(name) = host=\(target.host ?? "127.0.0.1") port=\(target.port ?? 5432) dbname=\(name)")
          }
          continue
        }
        let key = text.split(separator: "=").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        if section == "[databases]" && !text.hasPrefix(";") && !key.isEmpty { continue }  // the example's
        if let value = overrides[key] {
          lines.append("\(key) = \(value)")
        } else {
          lines.append(text)
        }
      }
      let ini = folder.appendingPathComponent("pgbouncer.ini")
      try lines.joined(separator: "\n").write(to: ini, atomically: true, encoding: .utf8)
      try "\"\(target.user ?? "postgres")\" \"\"\n".write(
        to: folder.appendingPathComponent("userlist.txt"), atomically: true, encoding: .utf8)
      _ = try runProgram("/bin/chown", ["-R", "postgres", folder.path])
      helper = try HelperProcess("/usr/sbin/pgbouncer", ["-u", "postgres", ini.path], quiet: true)
      var through = try #require(URLComponents(string: database))
      through.port = port
      url = try #require(through.string)
      for _ in 0..<100 {
        if (try? sql(url, "SELECT 1")) != nil { return }
        usleep(50_000)
      }
      throw CocoaError(
        .fileReadUnknown, userInfo: ["log": folder.appendingPathComponent("pgbouncer.log").path])
    }
  }

  @Test func threeWorkersShareTwoServerConnections() async throws {
    let database = try TestDatabase.create()
    let bouncer = try Bouncer(database: database, poolSize: 2)
    let fixture = try QueueFixture()
    let jobs = 12
    for index in 0..<jobs {
      try sql(bouncer.url, "SELECT thumbs.enqueue($1)", [fixture.origin.url("/files/photo.jpg?n=\(index)")])
    }
    let name = String(try #require(URLComponents(string: database)).path.dropFirst())
    let peak = ManagedAtomicMax()
    // Each sample opens a connection of its own, and the backend of the one before may still be on its
    // way out: the sampler names its connections so that none of them is counted as the pool's.
    var sampling = try #require(URLComponents(string: database))
    sampling.queryItems =
      (sampling.queryItems ?? []) + [URLQueryItem(name: "application_name", value: "sampler")]
    let samplerURL = try #require(sampling.string)
    let sampler = Task {
      while !Task.isCancelled {
        let count = try? sql(
          samplerURL,
          "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND application_name <> 'sampler' AND backend_type = 'client backend'",
          [name])
        if let text = count?.rows.first?[0] ?? nil, let value = Int(text) { peak.record(value) }
        try? await Task.sleep(for: .milliseconds(20))
      }
    }
    let totals = try await withThrowingTaskGroup(of: Int.self) { group in
      for _ in 0..<3 {
        group.addTask {
          try await drainQueue(databaseURL: bouncer.url, storage: fixture.storage) { config in
            config.preparedStatements = false
            config.pollInterval = 0.2
          }.succeeded
        }
      }
      return try await group.reduce(0, +)
    }
    // The sampler's last look must end before the test's own connection below could be counted.
    sampler.cancel()
    await sampler.value
    #expect(totals == jobs)
    let states = try sql(database, "SELECT state, count(*) FROM thumbs.jobs GROUP BY state").rows
    #expect(states == [["succeeded", "\(jobs)"]])
    // 3 workers x 4 connections each reached PostgreSQL as at most the pool's 2.
    #expect(peak.value >= 1 && peak.value <= 2, "peak server connections: \(peak.value)")
  }
}

/// The largest value recorded, from any task.
final class ManagedAtomicMax: @unchecked Sendable {
  private let lock = NSLock()
  private var largest = 0

  func record(_ value: Int) { lock.withLock { largest = max(largest, value) } }
  var value: Int { lock.withLock { largest } }
}

/// A loopback TCP port nothing listens on now (the kernel's pick for port 0).
func freeLoopbackPort() -> Int? {
  let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  guard fd >= 0 else { return nil }
  defer { close(fd) }
  var address = sockaddr_in()
  address.sin_family = sa_family_t(AF_INET)
  address.sin_addr.s_addr = inet_addr("127.0.0.1")
  address.sin_port = 0
  var length = socklen_t(MemoryLayout<sockaddr_in>.size)
  let bound = withUnsafeMutablePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
      bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
    }
  }
  return bound ? Int(UInt16(bigEndian: address.sin_port)) : nil
}
