/// An error from PostgreSQL or from the connection to it, carrying the server's SQLSTATE when there is one
/// (e.g. `23505` unique_violation, `40001` serialization_failure) so callers match on codes, not text.
public struct PostgresError: Error, Sendable, CustomStringConvertible {
  public enum Kind: Sendable, Equatable {
    /// Could not connect, or the connection broke: the statement may or may not have run.
    case connection
    /// The server refused the statement.
    case query
  }

  public var kind: Kind
  public var sqlState: String?
  public var message: String

  public init(kind: Kind, sqlState: String? = nil, message: String) {
    self.kind = kind
    self.sqlState = sqlState
    self.message = message
  }

  public var description: String {
    let state = sqlState.map { " [\($0)]" } ?? ""
    return "postgres\(state): \(message)"
  }

  public static let uniqueViolation = "23505"
}
