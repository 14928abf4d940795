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
  /// How long the worker waits for its answer (the file's `-- deadline:`).
  public let deadline: StatementDeadline

  public init(
    name: String, text: String, parameters: [String], parameterTypes: [String], columns: [String],
    columnTypes: [String], deadline: StatementDeadline = .none
  ) {
    self.name = name
    self.text = text
    self.parameters = parameters
    self.parameterTypes = parameterTypes
    self.columns = columns
    self.columnTypes = columnTypes
    self.deadline = deadline
  }

  public var description: String { name }
}

/// What a statement is, as far as waiting for its answer goes. The TCP bounds of `DatabaseLiveness` catch
/// a database whose host is gone; a database that is there but does not answer (a frozen process or
/// virtual machine, storage that hangs, a lock held by someone's forgotten session) keeps its connection
/// alive for ever, so each statement on the worker's path also has a deadline of its own, a multiple of
/// `--database-timeout` fitting what it does. A statement past its deadline costs its connection (the
/// next statement opens a new one) and fails as a connection error, which every caller already
/// retries; its outcome, if the server still commits it, is fenced like any write whose answer was lost.
public enum StatementDeadline: String, Sendable, Hashable {
  /// A few rows on a job's path (a lease, a heartbeat, a lookup): answered in milliseconds by a
  /// database that works, so twice the liveness bound is already a database that does not.
  case quick
  /// A batch: up to 500 outcomes, a step of collection or pruning. Six times the liveness bound.
  case batch
  /// Migrations and tools, whose length is the data's (or that wait for one another on purpose): only
  /// the connection's network bounds.
  case none
}
