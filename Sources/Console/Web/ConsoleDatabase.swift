import Blocking
import Queue
import Synchronization

/// The console's connections: one per request in flight, kept for the next (up to `keep`), each
/// statement run on the blocking pool. A connection that broke reconnects at its next statement
/// (PostgresConnection), so the console needs no care of its own when the database restarts.
final class ConsoleDatabase: Sendable {
  let conninfo: String
  let pool: BlockingPool
  private let idle = Mutex<[PostgresConnection]>([])
  private let keep: Int

  init(conninfo: String, pool: BlockingPool, keep: Int = 4) {
    self.conninfo = conninfo
    self.pool = pool
    self.keep = keep
  }

  /// Runs a typed statement on a connection of its own.
  func run<S: TypedStatement>(
    _ statement: S.Type, _ parameters: S.Parameters
  ) async throws(PostgresError)
    -> [S.Row]
  {
    let connection =
      idle.withLock { $0.popLast() }
      // Unprepared: the console's statements are planned for their values (the job list's filters).
      ?? PostgresConnection(connectingLaterTo: conninfo, preparesStatements: false)
    defer {
      idle.withLock { idle in
        if idle.count < keep { idle.append(connection) } else { connection.close() }
      }
    }
    return try await pool.run { () throws(PostgresError) in try connection.run(statement, parameters) }
  }

  func run<S: TypedStatement>(_ statement: S.Type) async throws(PostgresError) -> [S.Row]
  where S.Parameters == NoParameters {
    try await run(statement, NoParameters())
  }

  func close() {
    idle.withLock { idle in
      idle.forEach { $0.close() }
      idle.removeAll()
    }
  }
}
