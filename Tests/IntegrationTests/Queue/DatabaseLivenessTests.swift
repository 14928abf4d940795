import Blocking
import Foundation
import Queue
import TestSupport
import Testing

/// How long a silent database goes unnoticed (DatabaseLiveness): a database whose host vanished (its
/// link cut without a word) is given up within the liveness bound, with a statement in flight and on an
/// idle connection, and connected to again once it is back; a slow but alive one is not; the URL's own
/// settings win over the defaults.
@Suite(.serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)))
struct DatabaseLivenessTests {
  @Test func theDefaultsBoundEveryWaitAndTheURLsOwnSettingsWin() throws {
    let database = try TestDatabase.create()
    let plain = try PostgresConnection(conninfo: database)
    defer { plain.close() }
    let options = try plain.options()
    #expect(options["keepalives"] == "1" && options["keepalives_idle"] == "4")
    #expect(options["keepalives_interval"] == "2" && options["keepalives_count"] == "3")
    #expect(options["tcp_user_timeout"] == "10000" && options["connect_timeout"] == "10")
    let separator = database.contains("?") ? "&" : "?"
    let own = try PostgresConnection(
      conninfo: database + separator + "keepalives_idle=60&tcp_user_timeout=0",
      liveness: DatabaseLiveness(seconds: 4))
    defer { own.close() }
    let chosen = try own.options()
    #expect(chosen["keepalives_idle"] == "60" && chosen["tcp_user_timeout"] == "0")
    #expect(chosen["connect_timeout"] == "4" && chosen["keepalives_count"] == "3")
  }

  @Test func aSlowButAliveDatabaseIsNotTakenForGone() throws {
    let database = try TestDatabase.create()
    let connection = try PostgresConnection(conninfo: database, liveness: DatabaseLiveness(seconds: 2))
    defer { connection.close() }
    let started = ContinuousClock.now
    #expect(try connection.query("SELECT pg_sleep(6)::text").rows == [[""]])
    #expect(started.duration(to: .now) >= .seconds(6))
  }

  /// A statement has a deadline fitting what it is: a quick one that gets no answer within twice the
  /// bound costs its connection and fails as a connection error; the next statement connects again;
  /// a batch statement of the same length is within its own deadline. Statements without one (tools,
  /// migrations) wait as long as the database works (the test above).
  @Test func aStatementPastItsDeadlineCostsItsConnectionNotTheProcess() throws {
    let database = try TestDatabase.create()
    let liveness = DatabaseLiveness(seconds: 2)
    #expect(liveness.deadline(for: .quick) == .seconds(4) && liveness.deadline(for: .batch) == .seconds(12))
    #expect(liveness.deadline(for: .none) == nil)
    let connection = try PostgresConnection(conninfo: database, liveness: liveness)
    defer { connection.close() }
    let before = try connection.query("SELECT pg_backend_pid()::text").rows[0][0]
    let started = ContinuousClock.now
    #expect {
      try connection.query("SELECT pg_sleep(30)", deadline: .quick)
    } throws: { error in
      let failure = error as? PostgresError
      return failure?.kind == .connection && failure?.message.contains("did not answer") == true
    }
    let took = started.duration(to: .now)
    #expect(took >= .seconds(4) && took < .seconds(6), "given up after \(took)")
    let after = try connection.query("SELECT pg_backend_pid()::text").rows[0][0]
    #expect(after != before, "a new connection")
    #expect(try connection.query("SELECT pg_sleep(5)::text", deadline: .batch).rows == [[""]])
    // The server's end of the connection has the client's bounds (SQL/session_settings.sql).
    let settings = try connection.query(
      "SELECT current_setting('client_connection_check_interval'), current_setting('tcp_user_timeout')")
    #expect(settings.rows == [["1s", "2000"]] || settings.rows == [["1s", "0"]], "\(settings.rows)")
    // Every statement the worker runs says how long it may take.
    #expect(SQL.LeaseJobs.statement.deadline == .quick && SQL.CompleteJobs.statement.deadline == .batch)
    #expect(SQL.LockMigrations.statement.deadline == .none)
  }

  /// `thumbd migrate` cut off while a migration's transaction waits on a lock: the migrator gives up
  /// within the bound (without trying to reconnect for a rollback or an unlock the server does by
  /// itself) and says which migration failed; once the client side is closed the server ends the
  /// abandoned transaction while it still waits (its session lock with it), nothing of the migration is
  /// left, and the next `thumbd migrate` applies it.
  @Test(.enabled(if: VanishingLink.available, Comment(rawValue: VanishingLink.skipReason)))
  func aMigrateCutOffMidTransactionLeavesNothingHalfDone() async throws {
    let database = try TestDatabase.create()
    let binary = try #require(WorkerProcess.binary, "\(WorkerProcess.skipReason)")
    var components = try #require(URLComponents(string: database))
    let link = try VanishingLink(target: components.host ?? "127.0.0.1", port: components.port ?? 5432)
    let parts = link.address.split(separator: ":")
    (components.host, components.port) = (String(parts[0]), Int(parts[1]))
    let url = try #require(components.string)
    // This checkout's migrations and one more that needs a lock the test holds.
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("migrations-\(UUID())")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let source = TestDatabase.repoRoot.appendingPathComponent("migrations")
    for name in try FileManager.default.contentsOfDirectory(atPath: source.path) where name.hasSuffix(".sql")
    {
      try FileManager.default.copyItem(
        at: source.appendingPathComponent(name), to: folder.appendingPathComponent(name))
    }
    try """
    CREATE TABLE thumbs.probe_before (id int);
    LOCK TABLE thumbs.photos IN ACCESS EXCLUSIVE MODE;
    CREATE TABLE thumbs.probe_after (id int);

    """.write(to: folder.appendingPathComponent("9999_probe.sql"), atomically: true, encoding: .utf8)
    let holder = try PostgresConnection(conninfo: database)
    defer { holder.close() }
    try holder.execute(script: "BEGIN; LOCK TABLE thumbs.photos IN SHARE MODE")

    let migrate = Task.detached {
      let started = ContinuousClock.now
      let result = try runProgram(
        binary.path, ["migrate", "--dir", folder.path],
        environment: ["DATABASE_URL": url, "PATH": "/usr/bin:/bin"],
        withStandardError: true)
      return (result, started.duration(to: .now))
    }
    let waiting =
      "SELECT count(*)::text FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%probe%'"
    #expect(try await eventually(timeout: 20) { try sql(database, waiting).rows == [["1"]] })
    try link.cut()
    let cut = ContinuousClock.now
    let (result, _) = try await migrate.value
    let gaveUp = cut.duration(to: .now)
    #expect(result.code != 0 && result.output.contains("9999_probe"), "\(result.output)")
    #expect(gaveUp < .seconds(16), "migrate gave up \(gaveUp) after the cut (bound 10 s)")
    // The server's peer here is the link's proxy, which outlives the cut; a server that is a vanished
    // client's own peer finds it gone by its keepalives (set from the client's bounds). Close the proxy,
    // as the client's host would answer once back: the abandoned transaction ends while the test still
    // holds the lock it waits for (client_connection_check_interval), not when it gets it.
    link.closeProxies()
    let ended = try await eventually(timeout: 20) { try sql(database, waiting).rows == [["0"]] }
    #expect(ended, "the abandoned transaction still waits")
    if !ended {  // fail, not hang: the next migrate would wait for its session lock
      _ = try sql(
        database,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%probe%'"
      )
    }
    try holder.execute(script: "COMMIT")
    let tables =
      "SELECT count(*)::text FROM pg_tables WHERE schemaname = 'thumbs' AND tablename LIKE 'probe%'"
    #expect(try sql(database, tables).rows == [["0"]], "nothing of the cut migration is left")
    let again = try runProgram(
      binary.path, ["migrate", "--dir", folder.path],
      environment: ["DATABASE_URL": database, "PATH": "/usr/bin:/bin"],
      withStandardError: true)
    #expect(again.code == 0 && again.output.contains("applied 9999_probe"), "\(again.output)")
    #expect(try sql(database, tables).rows == [["2"]])
    print("migrate cut off mid-transaction: gave up \(gaveUp) after the cut")
  }

  @Test(.enabled(if: VanishingLink.available, Comment(rawValue: VanishingLink.skipReason)))
  func aVanishedDatabaseIsGivenUpWithinTheBoundAndReconnectedWhenBack() async throws {
    let database = try TestDatabase.create()
    var components = try #require(URLComponents(string: database))
    let link = try VanishingLink(target: components.host ?? "127.0.0.1", port: components.port ?? 5432)
    let parts = link.address.split(separator: ":")
    components.host = String(parts[0])
    components.port = Int(parts[1])
    let url = try #require(components.string)
    let liveness = DatabaseLiveness(seconds: 4)
    let busy = try PostgresConnection(conninfo: url, liveness: liveness)
    let idle = try PostgresConnection(conninfo: url, liveness: liveness)
    defer { [busy, idle].forEach { $0.close() } }
    #expect(try idle.query("SELECT 1").rows == [["1"]])
    let pool = BlockingPool(threads: 2, name: "liveness-test")
    defer { pool.shutdown() }

    // A statement in flight when the host vanishes: its answer never comes.
    let inFlight = Task {
      try await pool.run { () throws(PostgresError) -> Duration in
        let started = ContinuousClock.now
        _ = try? busy.query("SELECT pg_sleep(60)")
        return started.duration(to: .now)
      }
    }
    try await Task.sleep(for: .seconds(1))
    try link.cut()
    let cut = ContinuousClock.now
    // An idle connection's next statement: sent, never acknowledged.
    let idleFailure = await pool.run { () -> (Duration, String?) in
      let started = ContinuousClock.now
      do {
        _ = try idle.query("SELECT 2")
        return (started.duration(to: .now), nil)
      } catch {
        return (started.duration(to: .now), "\(error)")
      }
    }
    let inFlightTook = try await inFlight.value
    #expect(idleFailure.1 != nil, "an idle connection's statement failed")
    #expect(idleFailure.0 < .seconds(8), "given up after \(idleFailure.0), bound 4 s: \(idleFailure.1 ?? "")")
    #expect(inFlightTook < .seconds(1 + 8), "the statement in flight was given up after \(inFlightTook)")
    #expect(cut.duration(to: .now) < .seconds(10))

    // Back: the next statement connects again.
    try link.restore()
    let back = await eventually(timeout: 20) {
      (try? idle.query("SELECT 3").rows) == [["3"]]
    }
    #expect(back, "reconnected once the link was back")
    #expect(try busy.query("SELECT 4").rows == [["4"]])
  }
}
