import ArgumentParser
import Foundation
import Logging
import ThumbCore
import Worker

@main
struct Thumbd: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "thumbd",
    abstract: "A distributed thumbnail worker: PostgreSQL queue in, stored thumbnails out.",
    version: ThumbdVersion.current,
    subcommands: [
      Migrate.self, WorkerCommand.self, ConfigCommand.self, Enqueue.self, Status.self, ThumbnailCommand.self,
      GCCommand.self, Bench.self, ConsoleCommand.self,
    ])

  /// For the commands other than `worker`: text, at THUMBD_LOG_LEVEL (default info).
  static func bootstrapLogging() {
    let environment = ProcessInfo.processInfo.environment
    bootstrapLogging(
      format: environment["THUMBD_LOG_FORMAT"].flatMap { WorkerConfig.LogFormat(rawValue: $0) } ?? .text,
      level: environment["THUMBD_LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0) } ?? .info,
      secrets: environment["DATABASE_URL"].flatMap { DatabaseURL.password(in: $0) }.map { [$0] } ?? [])
  }

  /// Text lines (swift-log's stream handler) or JSON lines, with `secrets` masked in every line.
  static func bootstrapLogging(format: WorkerConfig.LogFormat, level: Logger.Level, secrets: [String]) {
    LoggingSystem.bootstrap { label in
      var handler: any LogHandler
      switch format {
      case .text:
        handler = RedactingLogHandler(StreamLogHandler.standardError(label: label), secrets: secrets)
      case .json: handler = RedactingLogHandler(JSONLogHandler(label: label), secrets: secrets)
      }
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
