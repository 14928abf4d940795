import Blocking
import Foundation
import Queue
import Testing

/// The lease runs its generic plan on the connection that leases (SQL/session_settings.sql): made once,
/// it must be the same index scans whether it was made over an empty queue or a large backlog, and its
/// pick must be the first rows of jobs_turn_idx. (`thumbd bench lease` shows it with 1,000,000 jobs.)
@Suite(.serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)))
struct LeasePlanTests {
  /// The lease's plan on a connection with the lease connection's settings, without its figures.
  func plan(_ database: String) throws -> [String] {
    let connection = try PostgresConnection(conninfo: database, genericPlans: true)
    defer { connection.close() }
    try connection.execute(
      script: "PREPARE lease(text, bigint, float8, bigint) AS " + SQL.LeaseJobs.statement.text)
    return try connection.query("EXPLAIN (COSTS OFF) EXECUTE lease('w', 2, 30, 32)").rows
      .map { ($0[0] ?? "").replacingOccurrences(of: #"\$[0-9]+"#, with: "$n", options: .regularExpression) }
  }

  @Test func theGenericPlanIsTheSameIndexScansOverAnEmptyQueueAndABacklog() throws {
    let database = try TestDatabase.create()
    try sql(database, "ANALYZE thumbs.jobs")
    let empty = try plan(database)
    try sql(
      database,
      """
      INSERT INTO thumbs.jobs (source_url, profile, owner)
      SELECT 'http://example.com/' || g || '.jpg', 'default', CASE WHEN g % 4 = 0 THEN 'o' || g ELSE 'bulk' END
        FROM generate_series(1, 20000) AS g
      """)
    try sql(database, "ANALYZE thumbs.jobs")
    let backlog = try plan(database)
    #expect(empty == backlog, "\(empty.joined(separator: "\n"))\n---\n\(backlog.joined(separator: "\n"))")
    let text = backlog.joined(separator: "\n")
    #expect(!text.contains("Seq Scan on jobs"), "\(text)")
    #expect(text.contains("Index Scan using jobs_turn_idx"), "\(text)")
  }

  /// The backend may go on calling thumbs.enqueue when it gained `owner` (a new function): whoever could
  /// run the old one may run the new one, and PUBLIC still may not.
  @Test func theNewEnqueueKeepsTheOldOnesGrants() throws {
    let all = TestDatabase.repoRoot.appendingPathComponent("migrations")
    let before = FileManager.default.temporaryDirectory.appendingPathComponent("migrations-\(UUID())")
    try FileManager.default.createDirectory(at: before, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: before) }
    for name in try FileManager.default.contentsOfDirectory(atPath: all.path) where name < "0019" {
      try FileManager.default.copyItem(
        at: all.appendingPathComponent(name), to: before.appendingPathComponent(name))
    }
    let database = try TestDatabase.create(migrations: before)
    let role = "backend_\(UInt32.random(in: 0...UInt32.max))"
    try sql(
      database,
      """
      DO $$ BEGIN
        CREATE ROLE \(role) NOLOGIN;
        REVOKE ALL ON FUNCTION thumbs.enqueue(text, text, integer, timestamptz, jsonb, text) FROM PUBLIC;
        GRANT EXECUTE ON FUNCTION thumbs.enqueue(text, text, integer, timestamptz, jsonb, text) TO \(role);
      END $$
      """)
    let connection = try PostgresConnection(conninfo: database)
    defer { connection.close() }
    _ = try Migrator(directory: all).apply(on: connection)
    let signature = "thumbs.enqueue(text, text, integer, timestamptz, jsonb, text, text)"
    #expect(
      try sql(database, "SELECT has_function_privilege('\(role)', '\(signature)', 'EXECUTE')").rows == [["t"]]
    )
    #expect(
      try sql(
        database,
        """
        SELECT count(*) FROM pg_proc p, aclexplode(p.proacl) a
         WHERE p.oid = '\(signature)'::regprocedure AND a.grantee = 0
        """
      ).rows == [["0"]])
    #expect(
      try sql(
        database, "SELECT to_regprocedure('thumbs.enqueue(text, text, integer, timestamptz, jsonb, text)')"
      ).rows == [[nil]])
    try sql(
      database, "DO $$ BEGIN REVOKE ALL ON FUNCTION \(signature) FROM \(role); DROP ROLE \(role); END $$")
  }
}
