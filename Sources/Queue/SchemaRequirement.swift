/// Whether a worker of this build can run on a database's schema. Its statements (SQL/*.sql) use every
/// migration up to `version`; on an older schema the first job would be rendered and then refused by
/// PostgreSQL (a missing column), again on every attempt. So a worker checks first, and waits, not ready,
/// until `thumbd migrate` has run. A newer schema is fine: migrations only add.
public enum SchemaRequirement {
  /// The newest migration (migrations/NNNN_name.sql) this build's statements need. Raised with each new
  /// migration: MigrationFolderTests fails when migrations/ holds a newer file than this.
  public static let version = "0024"

  /// Why the worker cannot start on a database whose newest applied migration is `newestApplied` (nil:
  /// none), for the log line an operator acts on; nil when it can.
  public static func problem(newestApplied: String?) -> String? {
    guard let newest = newestApplied else {
      return "no migration has been applied to this database: run `thumbd migrate`"
    }
    if newest >= version { return nil }
    return "the database's schema is at migration \(newest) and this worker needs \(version): "
      + "run `thumbd migrate` of this release (older workers keep working on the newer schema)"
  }

  /// What a refused start-up statement means for the operator; nil for an error that is not about the
  /// database's set-up (a lost connection: the usual wait for the database).
  public static func problem(_ error: PostgresError) -> String? {
    guard error.kind == .query else { return nil }
    switch error.sqlState {
    case "42P01", "3F000":  // undefined_table, invalid_schema_name
      return "the database has no thumbd schema: run `thumbd migrate` (\(error.message))"
    case "25006":  // read_only_sql_transaction
      return "the database is read-only (a hot standby?): DATABASE_URL must name the primary"
    case "42501":  // insufficient_privilege
      return "the database refused the worker's role: grant it thumbd_worker (deploy/sql/roles.sql) "
        + "(\(error.message))"
    default:
      return nil
    }
  }
}
