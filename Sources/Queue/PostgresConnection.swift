import CLibPQ
import Foundation

/// One libpq connection, owned and closed exactly once (in `close()` or deinit). Values travel as text
/// parameters ($1, $2, ...): SQL is never built by pasting values into it.
///
/// @unchecked Sendable: a PGconn must not be used by two threads at once. Every use goes through `lock`,
/// so callers on any thread are serialised. Calls block; use it from a BlockingPool, not from async code.
public final class PostgresConnection: @unchecked Sendable {
  private let conninfo: String
  private let liveness: DatabaseLiveness
  /// Shared with the process's other connections to the database (nil: on its own).
  private let group: DatabaseConnections?
  private var connection: OpaquePointer?
  /// The group's generation when this connection was made.
  private var generation: UInt64 = 0
  /// Statements prepared on the current server connection; emptied when it is re-established.
  private var preparedNames: Set<String> = []
  private let lock = NSLock()
  /// False: statements the callers would prepare run unprepared (PQexecParams, each in one protocol
  /// exchange), as a pooler in transaction mode needs: PgBouncer before 1.21 sends a connection's next
  /// statement to whichever server connection is free, where its prepared statement does not exist.
  public let preparesStatements: Bool
  /// Prepared statements always run their generic plan, made of index scans only (plan_cache_mode and
  /// enable_seqscan; SQL/session_settings.sql): for the connection that leases.
  public let genericPlans: Bool

  /// `connectNow` (the default) connects at once, so a bad DATABASE_URL is reported at start-up rather
  /// than at the first job. Without it the init never fails: the first statement connects, as any
  /// statement reconnects a broken connection, so a process can start while the database is down.
  public init(
    conninfo: String, connectNow: Bool = true, preparesStatements: Bool = true, genericPlans: Bool = false,
    liveness: DatabaseLiveness = .standard, group: DatabaseConnections? = nil
  ) throws(PostgresError) {
    self.conninfo = conninfo
    self.preparesStatements = preparesStatements
    self.genericPlans = genericPlans
    self.liveness = liveness
    self.group = group
    if connectNow { try locked { () throws(PostgresError) in try connectLocked() } }
  }

  /// Connects at the first statement (`init(conninfo:connectNow: false)`, without the `try`).
  public init(
    connectingLaterTo conninfo: String, preparesStatements: Bool = true, genericPlans: Bool = false,
    liveness: DatabaseLiveness = .standard, group: DatabaseConnections? = nil
  ) {
    self.conninfo = conninfo
    self.preparesStatements = preparesStatements
    self.genericPlans = genericPlans
    self.liveness = liveness
    self.group = group
  }

  deinit {
    if let connection { PQfinish(connection) }
  }

  public func close() {
    locked {
      if let connection { PQfinish(connection) }
      connection = nil
    }
  }

  /// Whether the connection is up (as far as libpq knows without a round trip) and still of the group's
  /// current generation: false once a statement found it broken, until the next statement reconnects.
  public var isConnected: Bool {
    locked {
      guard let connection else { return false }
      return PQstatus(connection) == CONNECTION_OK && generation == group?.generation ?? 0
    }
  }

  /// Runs one statement with text parameters. A broken connection is re-established first, so a restarted
  /// database costs the statements in flight at that moment, not the worker.
  ///
  /// `prepared`: the statement is parsed and planned once per connection and then only executed. For the
  /// queue's CTE statements planning costs more than running, so the hot statements use it. (Behind
  /// PgBouncer in transaction mode use version 1.21 or later, which tracks protocol-level prepared
  /// statements.)
  @discardableResult
  public func query(
    _ sql: String, _ parameters: [String?] = [], prepared: Bool = false, deadline: StatementDeadline = .none
  ) throws(PostgresError)
    -> QueryResult
  {
    try run(
      sql, parameters, preparedAs: prepared && preparesStatements ? Self.statementName(sql) : nil,
      deadline: deadline, describedAs: "statement")
  }

  /// Runs one of the statements of `SQL` (Sources/Queue/SQL), prepared under its own name
  /// (`thumbd_<name>`, as pg_prepared_statements shows it) when `prepared`, waiting for its answer no
  /// longer than its deadline allows.
  @discardableResult
  public func query(
    _ statement: SQLStatement, _ parameters: [String?] = [], prepared: Bool = false
  ) throws(PostgresError)
    -> QueryResult
  {
    assert(
      parameters.count == statement.parameters.count,
      "\(statement.name) takes \(statement.parameters.count) parameters, not \(parameters.count)")
    return try run(
      statement.text, parameters,
      preparedAs: prepared && preparesStatements ? "thumbd_" + statement.name : nil,
      deadline: statement.deadline, describedAs: statement.name)
  }

  private func run(
    _ sql: String, _ parameters: [String?], preparedAs name: String?, deadline kind: StatementDeadline,
    describedAs statementName: String
  ) throws(PostgresError)
    -> QueryResult
  {
    try locked { () throws(PostgresError) -> QueryResult in
      let conn = try liveConnection()
      let limit = liveness.deadline(for: kind)
      let deadline = limit.map { ContinuousClock.now + $0 }
      func exchange(_ send: () -> Bool) throws(PostgresError) -> QueryResult {
        switch PostgresExchange.run(conn, until: deadline, send: send) {
        case .success(let result): return try consume(result, conn)
        case .failure(.broken): return try consume(nil, conn)
        case .failure(.timedOut):
          // Mid-statement the connection cannot be used again: close it (the server ends the statement
          // when it finds the client gone) and let the next statement open a new one.
          PQfinish(conn)
          connection = nil
          preparedNames = []
          let message =
            "the database did not answer \(statementName) within \(limit.map { "\($0)" } ?? "its deadline")"
            + " (--database-timeout); connection closed"
          group?.lost(seenIn: generation, reason: message)
          throw PostgresError(kind: .connection, message: message)
        }
      }
      guard let name else {
        return try withCStrings(parameters) { values throws(PostgresError) in
          try exchange {
            PQsendQueryParams(conn, sql, Int32(parameters.count), nil, values, nil, nil, 0) == 1
          }
        }
      }
      if !preparedNames.contains(name) {
        _ = try exchange { PQsendPrepare(conn, name, sql, Int32(parameters.count), nil) == 1 }
        preparedNames.insert(name)
      }
      return try withCStrings(parameters) { values throws(PostgresError) in
        try exchange { PQsendQueryPrepared(conn, name, Int32(parameters.count), values, nil, nil, 0) == 1 }
      }
    }
  }

  /// What the server makes of a statement without running it: the types it infers for `$1`, `$2`, ...
  /// and the result's columns (name and type OIDs). Prepared as the unnamed statement, which the next
  /// unprepared query replaces, so nothing is left behind on the connection.
  public func describe(_ sql: String) throws(PostgresError) -> StatementDescription {
    try locked { () throws(PostgresError) -> StatementDescription in
      let conn = try liveConnection()
      _ = try consume(PQprepare(conn, "", sql, 0, nil), conn)
      let result = try checked(PQdescribePrepared(conn, ""), conn)
      defer { PQclear(result) }
      let columnCount = PQnfields(result)
      return StatementDescription(
        parameterTypes: (0..<PQnparams(result)).map { PQparamtype(result, $0) },
        columns: (0..<columnCount).map { String(cString: PQfname(result, $0)) },
        columnTypes: (0..<columnCount).map { PQftype(result, $0) })
    }
  }

  /// The connection's libpq options in effect (PQconninfo), secrets left out: what the defaults and the
  /// URL came to. Connects first if need be.
  public func options() throws(PostgresError) -> [String: String] {
    try locked { () throws(PostgresError) -> [String: String] in Self.options(of: try liveConnection()) }
  }

  private static func options(of conn: OpaquePointer) -> [String: String] {
    guard let all = PQconninfo(conn) else { return [:] }
    defer { PQconninfoFree(all) }
    var options: [String: String] = [:]
    var index = 0
    while let keyword = all[index].keyword {
      if let value = all[index].val, String(cString: keyword) != "password" {
        options[String(cString: keyword)] = String(cString: value)
      }
      index += 1
    }
    return options
  }

  /// A name derived from the text (FNV-1a), so each distinct statement is prepared once per connection.
  static func statementName(_ sql: String) -> String {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in sql.utf8 {
      hash ^= UInt64(byte)
      hash = hash &* 0x100_0000_01b3
    }
    return "thumbd_" + String(hash, radix: 16)
  }

  /// Runs a script of several statements without parameters (migrations only: PQexec allows many
  /// statements in one call, PQexecParams does not).
  public func execute(script: String) throws(PostgresError) {
    try locked { () throws(PostgresError) in
      let conn = try liveConnection()
      _ = try consume(PQexec(conn, script), conn)
    }
  }

  /// NSLock.withLock loses typed throws, so this does the same with them.
  private func locked<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
    lock.lock()
    defer { lock.unlock() }
    return try body()
  }

  private func connectLocked() throws(PostgresError) {
    let generation = group?.generation ?? 0
    do throws(PostgresError) {
      let conn = try openConnection(conninfo, applicationName: "thumbd", liveness: liveness, group: group)
      do throws(PostgresError) {
        if preparesStatements { try applySessionSettings(conn) }
      } catch {
        PQfinish(conn)
        throw error
      }
      connection = conn
      self.generation = generation
    } catch {
      group?.lost(seenIn: generation, reason: error.message)
      throw error
    }
  }

  /// Gives the server's end of the connection the client's bounds, and the plan cache its mode
  /// (SQL/session_settings.sql). Not behind a pooler (`preparesStatements` false): there the server's
  /// peer is the pooler, which stays, and a session setting would stay with a server connection others
  /// borrow.
  private func applySessionSettings(_ conn: OpaquePointer) throws(PostgresError) {
    let options = Self.options(of: conn)
    let standard = Dictionary(liveness.parameters.map { ($0.key, $0.value) }, uniquingKeysWith: { a, _ in a })
    func setting(_ key: String) -> String {
      options[key].flatMap { $0.isEmpty ? nil : $0 } ?? standard[key] ?? "0"
    }
    let interval = setting("keepalives_interval")
    let parameters = SQL.SessionSettings.Parameters(
      keepalivesIdle: setting("keepalives_idle"), keepalivesInterval: interval,
      keepalivesCount: setting("keepalives_count"), tcpUserTimeout: setting("tcp_user_timeout"),
      checkInterval: String((Int(interval) ?? 2) * 1000),
      planCacheMode: genericPlans ? "force_generic_plan" : "auto", enableSeqscan: genericPlans ? "off" : "on")
    let statement = SQL.SessionSettings.statement
    let deadline = liveness.deadline(for: statement.deadline).map { ContinuousClock.now + $0 }
    let answer = withCStrings(parameters.values) { values in
      PostgresExchange.run(conn, until: deadline) {
        PQsendQueryParams(conn, statement.text, Int32(statement.parameters.count), nil, values, nil, nil, 0)
          == 1
      }
    }
    guard case .success(let result) = answer else {
      throw PostgresError(
        kind: .connection,
        message: "could not apply the session settings: " + String(cString: PQerrorMessage(conn)))
    }
    _ = try consume(result, conn)
  }

  private func liveConnection() throws(PostgresError) -> OpaquePointer {
    if let connection, PQstatus(connection) == CONNECTION_OK, generation == group?.generation ?? 0 {
      return connection
    }
    if let connection { PQfinish(connection) }
    connection = nil
    preparedNames = []
    try connectLocked()
    return connection!
  }

  /// The result if it is not an error; otherwise it is freed and its error thrown.
  private func checked(_ result: OpaquePointer?, _ conn: OpaquePointer) throws(PostgresError) -> OpaquePointer
  {
    guard let result else {
      let message = String(cString: PQerrorMessage(conn))
      group?.lost(seenIn: generation, reason: message)
      throw PostgresError(kind: .connection, message: message)
    }
    switch PQresultStatus(result) {
    case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
      return result
    default:
      defer { PQclear(result) }
      let message = String(cString: PQresultErrorMessage(result)).trimmingCharacters(
        in: .whitespacesAndNewlines)
      let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
      let broken = PQstatus(conn) != CONNECTION_OK
      if broken { group?.lost(seenIn: generation, reason: message) }
      throw PostgresError(
        kind: broken || state == nil ? .connection : .query, sqlState: state, message: message)
    }
  }

  private func consume(_ result: OpaquePointer?, _ conn: OpaquePointer) throws(PostgresError) -> QueryResult {
    let result = try checked(result, conn)
    defer { PQclear(result) }
    let columnCount = Int(PQnfields(result))
    let rowCount = Int(PQntuples(result))
    let columns = (0..<columnCount).map { String(cString: PQfname(result, Int32($0))) }
    var rows: [[String?]] = []
    rows.reserveCapacity(rowCount)
    for r in 0..<rowCount {
      rows.append(
        (0..<columnCount).map { c in
          PQgetisnull(result, Int32(r), Int32(c)) == 1
            ? nil : String(cString: PQgetvalue(result, Int32(r), Int32(c)))
        })
    }
    let affected = Int(String(cString: PQcmdTuples(result))) ?? rowCount
    return QueryResult(columns: columns, rows: rows, affectedRows: affected)
  }
}

/// A prepared statement as the server describes it (`PostgresConnection.describe`). Types are OIDs
/// (`pg_type.oid`).
public struct StatementDescription: Sendable, Equatable {
  public var parameterTypes: [UInt32]
  public var columns: [String]
  public var columnTypes: [UInt32]

  public var parameterCount: Int { parameterTypes.count }
}

/// Opens a libpq connection with our defaults (the liveness bounds, the application name); the caller's
/// URL or conninfo overrides them (expand_dbname). The caller owns the result and PQfinishes it.
func openConnection(
  _ conninfo: String, applicationName: String, liveness: DatabaseLiveness, group: DatabaseConnections? = nil
) throws(PostgresError) -> OpaquePointer {
  let defaults = liveness.parameters + [("application_name", applicationName)]
  // After the URL: the host order overrides the URL's own (the same hosts, the last to answer first).
  let order = group?.hostOrder(for: conninfo) ?? []
  let keys = defaults.map(\.key) + ["dbname"] + order.map(\.key)
  let values = defaults.map(\.value) + [conninfo] + order.map(\.value)
  let conn = withCStrings(keys) { k in withCStrings(values) { v in PQconnectdbParams(k, v, 1) } }
  guard let conn else { throw PostgresError(kind: .connection, message: "out of memory") }
  guard PQstatus(conn) == CONNECTION_OK else {
    let message = String(cString: PQerrorMessage(conn)).trimmingCharacters(in: .whitespacesAndNewlines)
    PQfinish(conn)
    throw PostgresError(kind: .connection, message: message)
  }
  // NOTICEs ("relation already exists, skipping") are for interactive sessions; libpq would print
  // them on stderr, in the middle of our structured log.
  PQsetNoticeProcessor(conn, { _, _ in }, nil)
  group?.answered(conn, conninfo: conninfo)
  return conn
}

/// Hands C an array of NUL-terminated strings (NULL for nil) that lives for the duration of `body`.
func withCStrings<R, E: Error>(
  _ strings: [String?], _ body: (UnsafePointer<UnsafePointer<CChar>?>) throws(E) -> R
) throws(E) -> R {
  let copies: [UnsafeMutablePointer<CChar>?] = strings.map { $0.map { strdup($0)! } }
  defer { copies.forEach { free($0) } }
  let pointers = copies.map { UnsafePointer($0) } + [nil]
  return try pointers.withUnsafeBufferPointer { (buffer) throws(E) -> R in try body(buffer.baseAddress!) }
}
