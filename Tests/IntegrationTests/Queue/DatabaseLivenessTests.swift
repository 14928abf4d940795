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
