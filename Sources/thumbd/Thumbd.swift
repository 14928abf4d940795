import ArgumentParser
import Foundation
import Logging
import ThumbCore

@main
struct Thumbd: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "thumbd",
    abstract: "A distributed thumbnail worker: PostgreSQL queue in, stored thumbnails out.",
    version: ThumbdVersion.current,
    subcommands: [
      Migrate.self, WorkerCommand.self, Enqueue.self, Status.self, ThumbnailCommand.self, Bench.self,
    ])

  static func bootstrapLogging() {
    let level =
      ProcessInfo.processInfo.environment["THUMBD_LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0) } ?? .info
    LoggingSystem.bootstrap { label in
      var handler = StreamLogHandler.standardError(label: label)
      handler.logLevel = level
      return handler
    }
  }
}

/// DATABASE_URL, as CONTRACT.md names it.
struct DatabaseOptions: ParsableArguments {
  @Option(name: .customLong("database-url"), help: "libpq URI or conninfo (default: $DATABASE_URL)")
  var databaseURL: String?

  func resolved() throws -> String {
    if let databaseURL { return databaseURL }
    if let env = ProcessInfo.processInfo.environment["DATABASE_URL"], !env.isEmpty { return env }
    throw ValidationError(
      "set DATABASE_URL (or --database-url) to a PostgreSQL URI such as postgresql://user@host/db")
  }
}

/// An option's value: the flag, else THUMBD_<NAME>, else nil.
func setting(_ flag: String?, _ name: String) -> String? {
  if let flag { return flag }
  let env = ProcessInfo.processInfo.environment["THUMBD_\(name)"]
  return env?.isEmpty == false ? env : nil
}
