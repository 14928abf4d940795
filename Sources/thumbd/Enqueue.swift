import ArgumentParser
import Queue

struct Enqueue: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Add a job for URL and print its id (the live job's id if one exists for URL and profile).")

  @OptionGroup var database: DatabaseOptions
  @Argument(help: "the original's http(s) URL") var url: String
  @Option(help: "profile name") var profile = "default"
  @Option(help: "higher runs first") var priority = 0

  func run() throws {
    let connection = try PostgresConnection(conninfo: try database.resolved())
    defer { connection.close() }
    let result = try connection.query(SQL.enqueueJob, [url, profile, String(priority)])
    print(try result.ids.first.map(String.init) ?? "")
  }
}
