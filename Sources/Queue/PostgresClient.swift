public import Blocking

/// A connection used from async code: each statement runs on the blocking pool, never on the
/// cooperative threads.
public struct PostgresClient: Sendable {
  public let connection: PostgresConnection
  public let pool: BlockingPool

  /// `connectNow` (the default) connects at once, on the pool, and fails if it cannot. Without it the
  /// client connects at its first statement (see `PostgresConnection.init(conninfo:connectNow:)`) and
  /// this never fails.
  public init(conninfo: String, pool: BlockingPool, connectNow: Bool = true) async throws(PostgresError) {
    if connectNow {
      self.connection = try await pool.run { () throws(PostgresError) in
        try PostgresConnection(conninfo: conninfo)
      }
    } else {
      self.connection = PostgresConnection(connectingLaterTo: conninfo)
    }
    self.pool = pool
  }

  /// Connects at the first statement, like `connectNow: false`, but needs neither `try` nor `await`: for
  /// a worker that starts while the database is down.
  public init(
    connectingLaterTo conninfo: String, pool: BlockingPool, preparesStatements: Bool = true,
    genericPlans: Bool = false, liveness: DatabaseLiveness = .standard, group: DatabaseConnections? = nil
  ) {
    self.connection = PostgresConnection(
      connectingLaterTo: conninfo, preparesStatements: preparesStatements, genericPlans: genericPlans,
      liveness: liveness, group: group)
    self.pool = pool
  }

  @discardableResult
  public func query(
    _ sql: String, _ parameters: [String?] = [], prepared: Bool = false
  ) async throws(PostgresError)
    -> QueryResult
  {
    let connection = self.connection
    return try await pool.run { () throws(PostgresError) in
      try connection.query(sql, parameters, prepared: prepared)
    }
  }

  /// `query` with a statement prepared once per connection: for the hot statements of the queue.
  @discardableResult
  public func prepared(_ sql: String, _ parameters: [String?] = []) async throws(PostgresError) -> QueryResult
  {
    try await query(sql, parameters, prepared: true)
  }

  public func close() {
    connection.close()
  }
}

/// Encodes values as PostgreSQL array literals for `$n::text[]` parameters (one round trip for many rows).
public enum PostgresArray {
  public static func literal<T: PostgresTextValue>(_ values: [T]) -> String {
    "{" + values.map { quote($0.postgresText) }.joined(separator: ",") + "}"
  }

  /// Nil becomes SQL NULL (unquoted NULL in an array literal).
  public static func literal<T: PostgresTextValue>(_ values: [T?]) -> String {
    "{" + values.map { $0.map { quote($0.postgresText) } ?? "NULL" }.joined(separator: ",") + "}"
  }

  static func quote(_ value: String) -> String {
    // Most values (ids, tokens, keys, codes) have nothing to escape: one pass over the bytes finds out,
    // instead of walking the characters.
    if !value.utf8.contains(where: { $0 == 0x22 || $0 == 0x5C }) { return "\"" + value + "\"" }
    var out = "\""
    for ch in value {
      if ch == "\"" || ch == "\\" { out.append("\\") }
      out.append(ch)
    }
    return out + "\""
  }
}
