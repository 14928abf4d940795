public import Foundation

/// Applies `migrations/NNNN_name.sql` in order. Each file runs in its own transaction together with the
/// row that records it, so a failed migration leaves nothing behind. A session advisory lock serialises
/// concurrent `thumbd migrate` runs (a fleet starting at once): the second waits, then finds nothing to do.
///
/// A .sql file in the folder that is not named NNNN_name.sql is refused, never run: the schema snapshot
/// (Sources/Queue/SQL/schema.sql) and the statements next to it are not migrations.
public struct Migrator: Sendable {
  public struct Migration: Sendable, Equatable {
    public var version: String
    public var name: String
    public var sql: String
  }

  public struct Failure: Error, CustomStringConvertible {
    public var description: String
  }

  /// Arbitrary but fixed: the advisory lock key all thumbd processes agree on for migrations.
  static let lockKey: Int64 = 7_350_912_883

  public let migrations: [Migration]

  public init(directory: URL) throws {
    let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
      .filter { $0.hasSuffix(".sql") }
      .sorted()
    migrations = try files.map { file in
      guard let prefix = file.split(separator: "_").first, prefix.allSatisfy(\.isNumber) else {
        throw Failure(description: "migration file \(file) must be named NNNN_description.sql")
      }
      let sql = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
      return Migration(version: String(prefix), name: file, sql: sql)
    }
    if Set(migrations.map(\.version)).count != migrations.count {
      throw Failure(description: "two migration files share a version number in \(directory.path)")
    }
  }

  /// Finds the migrations folder: `preferred` (the command passes $THUMBD_MIGRATIONS: the library reads
  /// no environment), ./migrations, then upwards from the executable (a build in .build/<config>/ of a
  /// checkout), then the packaged location.
  public static func locateDirectory(preferred: String? = nil) -> URL? {
    var candidates: [URL] = []
    if let preferred, !preferred.isEmpty {
      candidates.append(URL(fileURLWithPath: preferred))
    }
    candidates.append(
      URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent("migrations"))
    var dir = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
      .deletingLastPathComponent()
    for _ in 0..<6 {
      candidates.append(dir.appendingPathComponent("migrations"))
      dir = dir.deletingLastPathComponent()
    }
    candidates.append(URL(fileURLWithPath: "/usr/share/thumbd/migrations"))
    return candidates.first {
      FileManager.default.fileExists(atPath: $0.appendingPathComponent("0001_init.sql").path)
    }
  }

  /// Applies what is missing; returns the names of the files applied (empty when up to date).
  public func apply(on connection: PostgresConnection) throws -> [String] {
    try connection.run(SQL.LockMigrations.self, .init(key: Self.lockKey))
    // A lost connection took the lock (and any open transaction) with it: no reconnecting to undo them.
    defer {
      if connection.isConnected {
        _ = try? connection.run(SQL.UnlockMigrations.self, .init(key: Self.lockKey))
      }
    }
    try connection.run(SQL.CreateThumbsSchema.self)
    try connection.run(SQL.CreateMigrationsTable.self)
    var done = Set<String>()
    for row in try connection.run(SQL.AppliedMigrations.self) {
      done.insert(row.version)
    }
    var applied: [String] = []
    for migration in migrations where !done.contains(migration.version) {
      do {
        // One script (PQexec), so a migration may hold many statements; BEGIN makes it and its record
        // one transaction.
        try connection.execute(script: "BEGIN;\n" + migration.sql)
        try connection.run(SQL.RecordMigration.self, .init(version: migration.version, name: migration.name))
        try connection.execute(script: "COMMIT")
      } catch {
        if connection.isConnected { try? connection.execute(script: "ROLLBACK") }
        throw Failure(description: "migration \(migration.name) failed: \(error)")
      }
      applied.append(migration.name)
    }
    return applied
  }
}
