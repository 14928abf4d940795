/// One statement of `Sources/Queue/SQL/<name>.sql`, as `scripts/gen-sql.py` wrote it into the `SQL` enum
/// (Generated/Statements.swift). The SQL lives in those files, where it can be read, diffed and tried in
/// psql as it is, with its reasons; Swift refers to it by name.
///
/// `parameters` and `columns` are what the file's header declares, with their PostgreSQL types.
/// SQLStatementTests prepares every statement on a migrated database and compares them with the
/// server's own description, so a migration that changes what a statement takes or returns fails the
/// tests instead of a worker.
public struct SQLStatement: Sendable, Hashable, CustomStringConvertible {
  /// The file's name without `.sql` (snake_case).
  public let name: String
  public let text: String
  /// `$1`, `$2`, ... in order.
  public let parameters: [String]
  public let parameterTypes: [String]
  /// The result's columns in order; empty for a statement that returns no rows.
  public let columns: [String]
  public let columnTypes: [String]

  public init(
    name: String, text: String, parameters: [String], parameterTypes: [String], columns: [String],
    columnTypes: [String]
  ) {
    self.name = name
    self.text = text
    self.parameters = parameters
    self.parameterTypes = parameterTypes
    self.columns = columns
    self.columnTypes = columnTypes
  }

  public var description: String { name }
}
