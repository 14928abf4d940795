import ArgumentParser
import Blocking
import Queue

struct Enqueue: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    abstract:
      "Add a job for URL and print its id (the id of the job that already stands for the photo and profile, if one does)."
  )

  @OptionGroup var database: DatabaseOptions
  @Argument(
    help: "the original's http(s) URL, or s3://BUCKET/KEY in a bucket the workers read (--source-buckets)")
  var url: String
  @Option(help: "profile name") var profile = "default"
  @Option(help: "higher runs first") var priority = 0
  @Option(name: .customLong("external-id"), help: "the backend's own id of the photo") var externalID: String?
  @Option(help: "the user or tenant the job is for: owners of equal priority are served in turn")
  var owner: String?

  /// Through the queue's own API, as a backend's code would call `thumbs.enqueue`.
  func run() async throws {
    let pool = BlockingPool(threads: 1, name: "thumbd-enqueue")
    defer { pool.shutdown() }
    let queue = JobQueue(client: try await PostgresClient(conninfo: try database.resolved(), pool: pool))
    defer { queue.client.close() }
    print(
      try await queue.enqueue(
        sourceURL: url, profile: profile, priority: priority, externalID: externalID, owner: owner))
  }
}
