import Foundation
import TestSupport
import Testing

/// `thumbd bench queue` and `thumbd bench latency` run against a scratch database, as docs/benchmarks
/// shows them: short runs, to catch a bench that the schema has come to refuse.
@Suite(.serialized, .enabled(if: ThumbdBinary.url != nil, Comment(rawValue: ThumbdBinary.skipReason)))
struct BenchCommandTests {
  func run(_ arguments: [String], on database: String) throws -> (code: Int32, output: String) {
    var environment = ProcessInfo.processInfo.environment
    environment["DATABASE_URL"] = database
    environment["THUMBD_MIGRATIONS"] = TestDatabase.repoRoot.appendingPathComponent("migrations").path
    return try runProgram(
      try #require(ThumbdBinary.url).path, ["bench"] + arguments, environment: environment,
      withStandardError: true)
  }

  @Test func theQueueAndLatencyBenchesRunAndLeaveNoJobs() throws {
    let database = try TestDatabase.create()
    let queue = try run(
      ["queue", "--jobs", "200", "--workers", "2", "--concurrency", "2", "--batch", "2"], on: database)
    #expect(queue.code == 0, "\(queue.output)")
    #expect(queue.output.contains("jobs_per_second="), "\(queue.output)")
    let latency = try run(["latency", "--jobs", "5"], on: database)
    #expect(latency.code == 0, "\(latency.output)")
    #expect(latency.output.contains("p50"), "\(latency.output)")
    #expect(try sql(database, "SELECT count(*) FROM thumbs.jobs").rows == [["0"]])
  }
}
