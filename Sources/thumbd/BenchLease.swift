import ArgumentParser
import Blocking
import Foundation
import Queue
import ThumbCore

struct BenchLease: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "lease",
    abstract: "The lease's plan and time with a near-empty queue and with a large backlog.",
    discussion: """
      On the lease connection's settings (its generic plan, index scans only), first with --few queued
      jobs of 10 owners, then after adding --backlog jobs of one owner and --owners owners of 3 jobs each
      (not timed; followed by VACUUM ANALYZE, as autovacuum would): --leases lease statements of --batch
      jobs each, timed from the client (one round trip each), and the plan of one more, from EXPLAIN
      (ANALYZE, BUFFERS). Prints both plans, the medians and p99s, and whether the plans' nodes and
      indexes are the same; last line same_plan=<bool> p50_ratio=<backlog/few>.
      """)

  @OptionGroup var database: DatabaseOptions
  @Option(help: "queued jobs of the near-empty queue") var few = 1_000
  @Option(help: "queued jobs of the owner with the backlog") var backlog = 1_000_000
  @Option(help: "other owners, with 3 queued jobs each") var owners = 10_000
  @Option(help: "timed lease statements per phase") var leases = 300
  @Option(help: "jobs per lease statement") var batch = 2

  func run() async throws {
    Thumbd.bootstrapLogging()
    let url = try database.resolved()
    try prepareBenchDatabase(url)
    let setUp = try PostgresConnection(conninfo: url)
    defer {
      try? deleteBenchJobs(setUp)
      setUp.close()
    }
    try setUp.run(BenchSQL.InsertOwnerJobs.self, .init(jobs: few, ownerPrefix: "few", owners: 10))
    try setUp.execute(script: BenchSQL.AnalyzeJobs.statement.text)
    let nearEmpty = try await measure(url)

    let started = ContinuousClock.now
    try setUp.run(BenchSQL.InsertOwnerJobs.self, .init(jobs: backlog, ownerPrefix: "bulk", owners: 1))
    try setUp.run(
      BenchSQL.InsertOwnerJobs.self, .init(jobs: owners * 3, ownerPrefix: "owner", owners: owners))
    try setUp.execute(script: BenchSQL.VacuumJobs.statement.text)
    print(String(format: "backlog inserted in %.1f s", started.duration(to: .now).milliseconds / 1000))
    let large = try await measure(url)

    let same = nearEmpty.shape == large.shape
    for (a, b) in zip(nearEmpty.shape, large.shape) where a != b { print("plans differ: '\(a)' / '\(b)'") }
    print("thumbd \(ThumbdVersion.current): lease of \(batch), \(leases) statements per phase")
    for (name, phase) in [
      ("near-empty (\(few) queued)", nearEmpty), ("backlog (\(few + backlog + owners * 3) queued)", large),
    ] {
      print("\n## \(name)\n\(phase.plan)")
      print(String(format: "p50_ms=%.3f p99_ms=%.3f", phase.percentile(0.5), phase.percentile(0.99)))
    }
    print(
      String(
        format: "\nsame_plan=%@ p50_ratio=%.3f", same ? "true" : "false",
        large.percentile(0.5) / nearEmpty.percentile(0.5)))
  }

  struct Phase {
    var times: [Double]
    var plan: String
    /// The plan's nodes and indexes, without figures.
    var shape: [String]

    func percentile(_ p: Double) -> Double { nearestRank(times.sorted(), p) }
  }

  private func measure(_ url: String) async throws -> Phase {
    let pool = BlockingPool(threads: 1, name: "bench-lease")
    defer { pool.shutdown() }
    // The worker's lease connection: prepared, generic plans, index scans only.
    let queue = JobQueue(client: PostgresClient(connectingLaterTo: url, pool: pool, genericPlans: true))
    defer { queue.client.close() }
    var times: [Double] = []
    for index in 0..<(leases + 10) {
      let before = ContinuousClock.now
      let jobs = try await queue.lease(workerID: "bench-lease", limit: batch, leaseSeconds: 30, siblings: 32)
      guard jobs.count == batch else { throw ValidationError("lease \(index) took \(jobs.count) jobs") }
      if index >= 10 { times.append(before.duration(to: .now).milliseconds) }
    }
    // The lease connection's own session settings, applied as the worker's are.
    let explain = try PostgresConnection(conninfo: url, genericPlans: true)
    defer { explain.close() }
    try explain.execute(
      script: "PREPARE bench_lease(text, bigint, float8, bigint) AS \(SQL.LeaseJobs.statement.text)")
    let plan = try explain.query(
      "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE bench_lease('bench-lease', \(batch), 30, 32)"
    ).rows.map { $0[0] ?? "" }
    let shape = plan.filter { !$0.contains("Time:") && !$0.contains("Buffers:") && !$0.contains("Planning:") }
      .map { $0.replacingOccurrences(of: #"\(actual.*\)"#, with: "", options: .regularExpression) }
      // PostgreSQL numbers the plan's internal parameters as it goes; only the rest is the plan's shape.
      .map { $0.replacingOccurrences(of: #"\$[0-9]+"#, with: "$n", options: .regularExpression) }
      .filter { !$0.contains("Rows Removed") && !$0.contains("Memory") }
    return Phase(times: times, plan: plan.joined(separator: "\n"), shape: shape)
  }
}
