/// A statement of `Sources/Queue/SQL` with the types of what it takes and returns, generated from its
/// header by `scripts/gen-sql.py` (`SQL.LeaseJobs`, ...): callers pass a `Parameters` value and read
/// `Row` fields, never positional strings or column names.
public protocol TypedStatement: SendableMetatype {
  associatedtype Parameters: StatementParameters
  associatedtype Row: StatementRow
  static var statement: SQLStatement { get }
}

/// A statement's parameters, in PostgreSQL's text format in the order of `$1`, `$2`, ... (nil: NULL).
public protocol StatementParameters: Sendable {
  var values: [String?] { get }
}

/// One row of a statement's result, read by column name.
public protocol StatementRow: Sendable {
  init(_ row: ResultRow) throws(PostgresError)
}

/// The parameters of a statement that takes none.
public struct NoParameters: StatementParameters {
  public init() {}
  public var values: [String?] { [] }
}

/// The row of a statement that returns none (or only `void`).
public struct NoRow: StatementRow {
  public init(_ row: ResultRow) throws(PostgresError) {}
}

/// A Swift value that travels in PostgreSQL's text format, as a parameter and as a column.
public protocol PostgresTextValue: Sendable {
  init?(postgresText: String)
  var postgresText: String { get }
}

extension String: PostgresTextValue {
  public init?(postgresText: String) { self = postgresText }
  public var postgresText: String { self }
}

extension Int: PostgresTextValue {
  public init?(postgresText: String) { self.init(postgresText) }
  public var postgresText: String { String(self) }
}

extension Int64: PostgresTextValue {
  public init?(postgresText: String) { self.init(postgresText) }
  public var postgresText: String { String(self) }
}

extension Double: PostgresTextValue {
  public init?(postgresText: String) { self.init(postgresText) }
  public var postgresText: String { String(self) }
}

/// PostgreSQL writes booleans as `t` and `f`.
extension Bool: PostgresTextValue {
  public init?(postgresText: String) {
    switch postgresText {
    case "t", "true": self = true
    case "f", "false": self = false
    default: return nil
    }
  }
  public var postgresText: String { self ? "t" : "f" }
}

extension ResultRow {
  /// The column's value; an error when the result has no such column, or the value is NULL or not a
  /// `T`.
  public func decode<T: PostgresTextValue>(_ column: String) throws(PostgresError) -> T {
    let text = try string(column)
    guard let value = T(postgresText: text) else { throw Self.unexpected(column, text, "\(T.self)") }
    return value
  }

  /// The column's value, nil for NULL; an error when the result has no such column or the value is not
  /// a `T`.
  public func decode<T: PostgresTextValue>(_ column: String) throws(PostgresError) -> T? {
    guard let text = try value(column) else { return nil }
    guard let value = T(postgresText: text) else { throw Self.unexpected(column, text, "\(T.self)") }
    return value
  }
}

extension PostgresConnection {
  /// Runs a typed statement and reads its rows.
  @discardableResult
  public func run<S: TypedStatement>(
    _ statement: S.Type, _ parameters: S.Parameters, prepared: Bool = false
  ) throws(PostgresError) -> [S.Row] {
    try query(S.statement, parameters.values, prepared: prepared).namedRows.map { row throws(PostgresError) in
      try S.Row(row)
    }
  }

  @discardableResult
  public func run<S: TypedStatement>(
    _ statement: S.Type, prepared: Bool = false
  ) throws(PostgresError) -> [S.Row]
  where S.Parameters == NoParameters {
    try run(statement, NoParameters(), prepared: prepared)
  }
}

extension PostgresClient {
  /// Runs a typed statement on the pool and reads its rows. `prepared`: parsed and planned once per
  /// connection (the hot statements of the queue).
  @discardableResult
  public func run<S: TypedStatement>(
    _ statement: S.Type, _ parameters: S.Parameters, prepared: Bool = false
  ) async throws(PostgresError) -> [S.Row] {
    let connection = self.connection
    return try await pool.run { () throws(PostgresError) in
      try connection.run(statement, parameters, prepared: prepared)
    }
  }

  @discardableResult
  public func run<S: TypedStatement>(
    _ statement: S.Type, prepared: Bool = false
  ) async throws(PostgresError) -> [S.Row] where S.Parameters == NoParameters {
    try await run(statement, NoParameters(), prepared: prepared)
  }
}
