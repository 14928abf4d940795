/// Rows copied out of a libpq result, which is freed before this is returned: nothing here points into C.
///
/// Read cells by column name (`namedRows`), not by position: a statement's columns are declared in its
/// .sql file, and a name that is not there is an error rather than a quietly wrong value.
public struct QueryResult: Sendable {
  public var columns: [String]
  public var rows: [[String?]]
  /// Rows touched by INSERT/UPDATE/DELETE (PQcmdTuples), or the number of rows returned.
  public var affectedRows: Int

  public init(columns: [String], rows: [[String?]], affectedRows: Int? = nil) {
    self.columns = columns
    self.rows = rows
    self.affectedRows = affectedRows ?? rows.count
  }

  /// The rows, each read by column name. The name-to-position map is built here, once for the whole
  /// result, and shared by its rows: keep the value rather than asking for it per row.
  public var namedRows: NamedRows { NamedRows(columns: ColumnIndex(columns), rows: rows) }

  public subscript(row: Int, column: String) -> String? {
    guard let index = columns.firstIndex(of: column) else { return nil }
    return rows[row][index]
  }
}

/// The positions of a result's columns by name.
public struct ColumnIndex: Sendable {
  public let names: [String]
  private let positions: [String: Int]

  public init(_ names: [String]) {
    self.names = names
    // The first of two equal names wins, as in SQL's own `SELECT a, a`.
    var positions: [String: Int] = [:]
    positions.reserveCapacity(names.count)
    for (position, name) in names.enumerated() where positions[name] == nil { positions[name] = position }
    self.positions = positions
  }

  /// The position of `column`; an error naming the columns there are when the result has no such column.
  public func position(of column: String) throws(PostgresError) -> Int {
    guard let position = positions[column] else {
      throw PostgresError(
        kind: .query,
        message: "the result has no column \"\(column)\" (it has: \(names.joined(separator: ", ")))")
    }
    return position
  }

  public func contains(_ column: String) -> Bool { positions[column] != nil }
}

/// A result's rows, read by column name.
public struct NamedRows: RandomAccessCollection, Sendable {
  public let columns: ColumnIndex
  private let rows: [[String?]]

  init(columns: ColumnIndex, rows: [[String?]]) {
    self.columns = columns
    self.rows = rows
  }

  public var startIndex: Int { rows.startIndex }
  public var endIndex: Int { rows.endIndex }
  public subscript(position: Int) -> ResultRow { ResultRow(columns: columns, values: rows[position]) }
}

/// One row of a result. Every accessor throws when the result has no such column; the typed ones also
/// when the value is NULL or not of that type. Values arrive in PostgreSQL's text format.
public struct ResultRow: Sendable {
  public let columns: ColumnIndex
  public let values: [String?]

  /// The value as text; nil for NULL.
  public func value(_ column: String) throws(PostgresError) -> String? {
    values[try columns.position(of: column)]
  }

  /// The value as text; NULL is an error.
  public func string(_ column: String) throws(PostgresError) -> String {
    guard let value = try value(column) else { throw Self.unexpected(column, nil, "a value") }
    return value
  }

  public func int64(_ column: String) throws(PostgresError) -> Int64 {
    let text = try string(column)
    guard let value = Int64(text) else { throw Self.unexpected(column, text, "an integer") }
    return value
  }

  public func int(_ column: String) throws(PostgresError) -> Int {
    let text = try string(column)
    guard let value = Int(text) else { throw Self.unexpected(column, text, "an integer") }
    return value
  }

  public func double(_ column: String) throws(PostgresError) -> Double {
    let text = try string(column)
    guard let value = Double(text) else { throw Self.unexpected(column, text, "a number") }
    return value
  }

  /// PostgreSQL writes booleans as `t` and `f`.
  public func bool(_ column: String) throws(PostgresError) -> Bool {
    switch try string(column) {
    case "t": return true
    case "f": return false
    case let text: throw Self.unexpected(column, text, "a boolean")
    }
  }

  /// The value as text, nil for NULL. Stops the program when the result has no such column: for tests
  /// and tools; the queue uses the throwing accessors.
  public subscript(column: String) -> String? {
    do {
      return try value(column)
    } catch {
      preconditionFailure(error.message)
    }
  }

  static func unexpected(_ column: String, _ text: String?, _ expected: String) -> PostgresError {
    PostgresError(
      kind: .query,
      message: "column \"\(column)\" is \(text.map { "\"\($0)\"" } ?? "NULL"), expected \(expected)")
  }
}
