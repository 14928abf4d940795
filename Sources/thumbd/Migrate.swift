import ArgumentParser
import Foundation
import Queue

struct Migrate: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Apply migrations/*.sql in order (idempotent; safe when several run at once).")

  @OptionGroup var database: DatabaseOptions

  @Option(help: "folder of NNNN_name.sql files (default: found next to the binary or $THUMBD_MIGRATIONS)")
  var dir: String?

  func run() throws {
    guard
      let folder = dir.map({ URL(fileURLWithPath: $0) })
        ?? Migrator.locateDirectory(preferred: ProcessInfo.processInfo.environment["THUMBD_MIGRATIONS"])
    else {
      throw ValidationError("no migrations folder found; pass --dir or set THUMBD_MIGRATIONS")
    }
    let migrator = try Migrator(directory: folder)
    let connection = try PostgresConnection(conninfo: try database.resolved())
    defer { connection.close() }
    let applied = try migrator.apply(on: connection)
    if applied.isEmpty {
      print("schema is up to date (\(migrator.migrations.count) migrations)")
    } else {
      for name in applied { print("applied \(name)") }
    }
  }
}
