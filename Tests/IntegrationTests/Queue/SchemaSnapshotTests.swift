import Foundation
import Queue
import Testing

/// Sources/Queue/SQL/schema.sql is the thumbs schema the migrations make, as scripts/dump-schema.sh
/// writes it: one file to read for what the statements run against, and a diff in review for every
/// migration. It fails here when a migration changes the schema and the snapshot was not refreshed.
@Suite(.serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)))
struct SchemaSnapshotTests {
  static let snapshot = TestDatabase.repoRoot.appendingPathComponent("Sources/Queue/SQL/schema.sql")

  @Test func migratedSchemaMatchesTheSnapshot() throws {
    let database = try TestDatabase.create()
    let dump = try run(["bash", "scripts/dump-schema.sh", database])
    try #require(dump.status == 0, "scripts/dump-schema.sh failed:\n\(dump.error)")
    let committed = (try? String(contentsOf: Self.snapshot, encoding: .utf8)) ?? ""
    if dump.output == committed { return }
    if ProcessInfo.processInfo.environment["THUMBD_UPDATE_SCHEMA_SNAPSHOT"] == "1" {
      try dump.output.write(to: Self.snapshot, atomically: true, encoding: .utf8)
      return
    }
    let fresh = try makeTemporaryDirectory().appendingPathComponent("schema.sql")
    try dump.output.write(to: fresh, atomically: true, encoding: .utf8)
    Issue.record(
      """
      The migrated schema differs from Sources/Queue/SQL/schema.sql. \(Self.firstDifference(committed, dump.output))
      See all of it: diff -u Sources/Queue/SQL/schema.sql \(fresh.path)
      If the migrations are right, refresh the snapshot and commit it:
        THUMBD_UPDATE_SCHEMA_SNAPSHOT=1 scripts/with-postgres.sh swift test --filter SchemaSnapshotTests
      (or scripts/dump-schema.sh --write DATABASE_URL on a freshly migrated database).
      """)
  }

  /// The migrations' notes live in the schema as comments (migrations/0021), so the snapshot and psql's
  /// `\d+` carry them: every table, view, function and index a migration adds says what it is (a primary
  /// key or a unique constraint's index excepted: its constraint says it).
  @Test func everyObjectOfTheSchemaSaysWhatItIs() throws {
    let database = try TestDatabase.create()
    let connection = try PostgresConnection(conninfo: database)
    defer { connection.close() }
    let silent = try connection.query(
      """
      SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = 'thumbs' AND c.relkind IN ('r', 'v', 'p', 'i')
         AND obj_description(c.oid, 'pg_class') IS NULL
         AND NOT EXISTS (SELECT FROM pg_constraint k WHERE k.conindid = c.oid)
      UNION ALL
      SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
       WHERE n.nspname = 'thumbs' AND obj_description(p.oid, 'pg_proc') IS NULL
      ORDER BY 1
      """
    ).rows.map { $0[0] ?? "" }
    #expect(
      silent.isEmpty,
      "say what each is and why with COMMENT ON, in the migration that adds it: \(silent.joined(separator: ", "))"
    )
  }

  /// The first line where two texts differ, with both versions of it.
  static func firstDifference(_ expected: String, _ actual: String) -> String {
    let old = expected.split(separator: "\n", omittingEmptySubsequences: false)
    let new = actual.split(separator: "\n", omittingEmptySubsequences: false)
    let common = min(old.count, new.count)
    let line = (0..<common).first { old[$0] != new[$0] } ?? common
    let before = line < old.count ? String(old[line]) : "(end of file)"
    let after = line < new.count ? String(new[line]) : "(end of file)"
    return "First difference at line \(line + 1):\n  snapshot: \(before)\n  migrated: \(after)"
  }

  private func run(_ arguments: [String]) throws -> (status: Int32, output: String, error: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    process.currentDirectoryURL = TestDatabase.repoRoot
    let output = Pipe()
    let error = Pipe()
    process.standardOutput = output
    process.standardError = error
    try process.run()
    // stderr holds a line or two at most, so reading stdout to its end first cannot block the script.
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    let errorText = String(decoding: error.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return (process.terminationStatus, text, errorText)
  }
}

/// The migrator runs migrations/NNNN_name.sql and nothing else.
@Suite struct MigrationFolderTests {
  @Test func onlyNumberedFilesAreMigrations() throws {
    let folder = TestDatabase.repoRoot.appendingPathComponent("migrations")
    let migrator = try Migrator(directory: folder)
    #expect(!migrator.migrations.isEmpty)
    #expect(migrator.migrations.allSatisfy { $0.name.first!.isNumber && $0.name.hasSuffix(".sql") })
    #expect(!migrator.migrations.contains { $0.name.contains("schema") })
  }

  /// Workers wait for the schema their statements need (SchemaRequirement): it must name the newest
  /// migration, or a worker would run on a schema missing what a new migration added.
  @Test func workersRequireTheNewestMigration() throws {
    let migrator = try Migrator(directory: TestDatabase.repoRoot.appendingPathComponent("migrations"))
    #expect(migrator.migrations.map(\.version).max() == SchemaRequirement.version)
  }

  @Test func aFolderWithTheSnapshotInItIsRefused() throws {
    let folder = try makeTemporaryDirectory()
    defer { try? FileManager.default.removeItem(at: folder) }
    try "SELECT 1;".write(
      to: folder.appendingPathComponent("0001_init.sql"), atomically: true, encoding: .utf8)
    try FileManager.default.copyItem(
      at: SchemaSnapshotTests.snapshot, to: folder.appendingPathComponent("schema.sql"))
    #expect(throws: Migrator.Failure.self) { try Migrator(directory: folder) }
    // Nor is the statements' folder a migrations folder.
    #expect(throws: Migrator.Failure.self) {
      try Migrator(directory: TestDatabase.repoRoot.appendingPathComponent("Sources/Queue/SQL"))
    }
  }
}
