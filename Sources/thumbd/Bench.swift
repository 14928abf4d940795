import ArgumentParser
import Blocking
import Foundation
import Logging
import Queue
import Synchronization
import ThumbCore
import Worker

struct Bench: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Measure the queue (no-op throughput, enqueue-to-start latency) and the memory model.",
    discussion: """
      Both run against DATABASE_URL, which should be a scratch database: they add jobs whose source_url
      starts with bench:// and delete them afterwards. No other worker may be running against it.
      """,
    subcommands: [BenchQueue.self, BenchLatency.self, BenchLease.self, BenchMemory.self, BenchPlan.self])
}

/// A handler that does nothing: what is left is the queue's own cost.
struct NoopHandler: JobHandler {
  func process(_ job: LeasedJob, _ life: JobLife) async throws(JobError) -> JobResult { [] }
}

/// Deletes every bench job (before a run, and after it, so runs do not pile up).
func deleteBenchJobs(_ connection: PostgresConnection) throws {
  try connection.run(BenchSQL.DeleteJobs.self)
}

/// The nearest-rank percentile (`p` above 0, at most 1) of ascending, non-empty `sorted`.
func nearestRank(_ sorted: [Double], _ p: Double) -> Double {
  sorted[min(sorted.count - 1, Int((p * Double(sorted.count)).rounded(.up)) - 1)]
}

/// Migrates the scratch database and clears earlier bench jobs.
func prepareBenchDatabase(_ url: String) throws {
  guard
    let folder = Migrator.locateDirectory(preferred: ProcessInfo.processInfo.environment["THUMBD_MIGRATIONS"])
  else {
    throw ValidationError("no migrations folder found; set THUMBD_MIGRATIONS")
  }
  let connection = try PostgresConnection(conninfo: url)
  defer { connection.close() }
  _ = try Migrator(directory: folder).apply(on: connection)
  try deleteBenchJobs(connection)
  let others = try connection.run(BenchSQL.LiveJobs.self).first?.jobs
  guard others == 0 else {
    throw ValidationError(
      "the database has \(others.map(String.init) ?? "?") live jobs that are not bench jobs: use a scratch database"
    )
  }
  try connection.run(BenchSQL.DeleteWorkers.self)
  // Run as a simple-protocol script: VACUUM cannot run inside the implicit transaction of a
  // parameterised statement.
  try connection.execute(script: BenchSQL.VacuumJobs.statement.text)
}

private func quietLogger(_ label: String) -> Logger {
  var logger = Logger(label: label)
  logger.logLevel = .warning
  return logger
}

struct BenchQueue: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "queue",
    abstract: "No-op jobs through the real lease/complete path; last line jobs_per_second=<n>.",
    discussion: """
      Inserts --jobs queued jobs (not timed), then times worker start to drained: every job leased by the
      batch lease statement, run by a handler that does nothing, and completed through the batched,
      lease-fenced completion statement.
      """)

  @OptionGroup var database: DatabaseOptions
  @Option(help: "jobs to run") var jobs = 10_000
  // Two batches in flight: one is leased while the outcomes of the one before are written.
  @Option(help: "jobs in flight per worker") var concurrency = 200
  @Option(help: "jobs claimed per lease statement") var batch = 100
  @Option(help: "worker instances in this process, each with its own connections") var workers = 1
  @Option(help: "other ready jobs of a leased URL taken along per lease (the worker's default: 32)")
  var leaseSiblings = 32
  @Option(
    help: ArgumentHelp(
      "a local server's postmaster PID: also print the server's CPU per job, its insert included",
      valueName: "pid"))
  var serverPid: Int32?

  func run() async throws {
    Thumbd.bootstrapLogging()
    let url = try database.resolved()
    try prepareBenchDatabase(url)
    let connection = try PostgresConnection(conninfo: url)
    defer { connection.close() }
    let server = serverPid.map(ServerCPU.init(postmaster:))
    let cpuBefore = try server?.seconds()
    try connection.run(BenchSQL.InsertJobs.self, .init(jobs: jobs))
    try connection.execute(script: BenchSQL.AnalyzeJobs.statement.text)

    let start = ContinuousClock.now
    let totals = try await withThrowingTaskGroup(of: WorkerCounters.self) { group in
      for _ in 0..<workers {
        var config = WorkerConfig(databaseURL: url, storageURL: "file:///nonexistent")
        config.concurrency = concurrency
        config.leaseBatch = batch
        config.leaseSiblings = leaseSiblings
        config.drain = true
        let worker = Worker(config: config, logger: quietLogger("thumbd.bench"), handler: NoopHandler())
        group.addTask { try await worker.run() }
      }
      return try await group.reduce(into: WorkerCounters()) {
        $0.succeeded += $1.succeeded
        $0.leaseStatements += $1.leaseStatements
        $0.outcomeBatches += $1.outcomeBatches
      }
    }
    let elapsed = start.duration(to: .now)
    let seconds = elapsed.milliseconds / 1000
    // The workers' backends have exited: give the postmaster a moment to reap them (their CPU moves to
    // its children's times then).
    if server != nil { try await Task.sleep(for: .milliseconds(300)) }
    let cpuAfter = try server?.seconds()
    let done = try connection.run(BenchSQL.SucceededJobs.self).first.map { Int($0.jobs) }
    try deleteBenchJobs(connection)
    guard totals.succeeded == jobs, done == jobs else {
      throw ValidationError(
        "only \(totals.succeeded) of \(jobs) jobs succeeded (database says \(done.map(String.init) ?? "?"))")
    }
    print(
      "thumbd \(ThumbdVersion.current): \(jobs) jobs, \(workers) worker(s), concurrency \(concurrency), batch \(batch)"
    )
    print(
      String(
        format: "lease_statements=%d outcome_batches=%d jobs_per_lease=%.1f jobs_per_outcome_batch=%.1f",
        totals.leaseStatements, totals.outcomeBatches, Double(jobs) / Double(max(1, totals.leaseStatements)),
        Double(jobs) / Double(max(1, totals.outcomeBatches))))
    print(String(format: "elapsed_s=%.3f", seconds))
    if let cpuBefore, let cpuAfter {
      print(String(format: "server_cpu_ms_per_job=%.3f", (cpuAfter - cpuBefore) * 1000 / Double(jobs)))
    }
    print(String(format: "jobs_per_second=%.1f", Double(jobs) / seconds))
  }
}

/// Records when each job started, for the latency bench.
final class StartRecorder: JobHandler, Sendable {
  let starts = Mutex<[Int64: ContinuousClock.Instant]>([:])
  let started = WakeSignal()

  func process(_ job: LeasedJob, _ life: JobLife) async throws(JobError) -> JobResult {
    let now = ContinuousClock.now
    starts.withLock { $0[job.id] = now }
    started.signal()
    return []
  }
}

struct BenchLatency: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "latency",
    abstract: "Enqueue-to-start latency with idle workers; last line p50_ms=<n> p99_ms=<n>.",
    discussion: """
      Starts idle workers, then enqueues one job at a time with thumbs.enqueue on its own connection and
      measures from just before the enqueue call to the moment the job's handler starts (one clock, one
      process). Waits 5-20 ms between jobs so the workers are idle each time. 20 warm-up jobs are not counted.
      """)

  @OptionGroup var database: DatabaseOptions
  @Option(help: "jobs to measure") var jobs = 500
  @Option(help: "idle worker instances in this process") var workers = 1
  @Option(help: "jobs in flight per worker") var concurrency = 2
  @Option(help: "polling fallback interval in seconds (the wake-up under test is LISTEN/NOTIFY)")
  var pollInterval = 1.0

  func run() async throws {
    Thumbd.bootstrapLogging()
    let url = try database.resolved()
    try prepareBenchDatabase(url)
    let recorder = StartRecorder()
    let shutdown = ShutdownSignal()
    let pool = BlockingPool(threads: 1, name: "bench-enqueue")
    defer { pool.shutdown() }
    let enqueuer = JobQueue(client: try await PostgresClient(conninfo: url, pool: pool))
    defer { enqueuer.client.close() }

    let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
      for _ in 0..<workers {
        var config = WorkerConfig(databaseURL: url, storageURL: "file:///nonexistent")
        config.concurrency = concurrency
        config.pollInterval = pollInterval
        let worker = Worker(
          config: config, shutdown: shutdown, logger: quietLogger("thumbd.bench"), handler: recorder)
        group.addTask {
          _ = try await worker.run()
          return []
        }
      }
      group.addTask {
        defer { shutdown.request() }
        // Let every worker connect, register and LISTEN.
        try await Task.sleep(for: .milliseconds(500))
        let warmUp = 20
        var measured: [Double] = []
        var enqueueCalls: [Double] = []
        let run = UInt32.random(in: 0...UInt32.max)
        for index in 0..<(warmUp + jobs) {
          let before = ContinuousClock.now
          let id = try await enqueuer.enqueue(
            sourceURL: "http://bench.invalid/latency/\(run)/\(index)", profile: "default", priority: 0)
          let enqueued = before.duration(to: .now)
          var startedAt = recorder.starts.withLock { $0[id] }
          while startedAt == nil {
            await recorder.started.wait(timeout: 5)
            startedAt = recorder.starts.withLock { $0[id] }
            if startedAt == nil && before.duration(to: .now) > .seconds(30) {
              throw ValidationError("job \(id) did not start within 30 s")
            }
          }
          let latency = before.duration(to: startedAt!)
          if index >= warmUp {
            measured.append(latency.milliseconds)
            enqueueCalls.append(enqueued.milliseconds)
          }
          try await Task.sleep(for: .milliseconds(Int.random(in: 5...20)))
        }
        enqueueCalls.sort()
        print(String(format: "enqueue_call_p50_ms=%.3f", enqueueCalls[enqueueCalls.count / 2]))
        return measured
      }
      return try await group.reduce(into: []) { $0 += $1 }
    }
    try deleteBenchJobs(PostgresConnection(conninfo: url))
    let sorted = latencies.sorted()
    func percentile(_ p: Double) -> Double { nearestRank(sorted, p) }
    print(
      "thumbd \(ThumbdVersion.current): \(sorted.count) jobs, \(workers) idle worker(s), LISTEN/NOTIFY wake-up"
    )
    print(
      String(
        format: "p90_ms=%.3f max_ms=%.3f mean_ms=%.3f", percentile(0.9), sorted.last!,
        sorted.reduce(0, +) / Double(sorted.count)))
    print(String(format: "p50_ms=%.3f p99_ms=%.3f", percentile(0.5), percentile(0.99)))
  }
}

extension Duration {
  var milliseconds: Double { Double(components.seconds) * 1000 + Double(components.attoseconds) / 1e15 }
}
