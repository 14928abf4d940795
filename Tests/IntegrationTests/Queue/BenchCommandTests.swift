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

  /// `thumbd bench plan` answers each size read on standard input with the default profile's plan, a
  /// JSON line each (bench/plan.py asks it instead of keeping a copy of the planner).
  @Test func thePlanBenchAnswersEachSizeWithThumbdsPlan() throws {
    let process = Process()
    let binary: URL = try #require(ThumbdBinary.url)
    process.executableURL = binary
    process.arguments = ["bench", "plan"]
    let (input, output) = (Pipe(), Pipe())
    process.standardInput = input
    process.standardOutput = output
    try process.run()
    input.fileHandleForWriting.write(Data("4000 3000\n8000 6000 4000 3000\n".utf8))
    try input.fileHandleForWriting.close()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    #expect(process.terminationStatus == 0)
    let answers = try text.split(separator: "\n").map {
      try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
    }
    try #require(answers.count == 2, "\(text)")
    let steps = try #require(answers[0]["steps"] as? [[String: Any]])
    // Largest need first; medium from large, small and the square from medium.
    #expect(steps.map { $0["variant"] as? Int } == [0, 1, 3, 2])
    #expect(steps.map { $0["source"] as? Int } == [nil, 0, 1, 1])
    #expect(answers[1]["decodeDenominator"] as? Int == 2)
    let scaled = try #require(answers[1]["steps"] as? [[String: Any]])
    #expect(scaled.first?["region"] as? [Double] == [0, 0, 4000, 3000], "large from the decode at 1/2")
  }
}
