import Logging
import Metrics
import Queue
import Synchronization
import Testing
import ThumbCore

@testable import Worker

/// The runner performing what `HeldJobs` decides, with a handler the test steers and an outcome writer
/// that keeps what it is given: no database, no network, no storage.
@Suite struct JobRunnerTests {
  /// A handler whose jobs run `body`, and tell the test when they start.
  final class Handler: JobHandler {
    let body: @Sendable (LeasedJob, JobLife) async throws(JobError) -> JobResult
    let (started, startedSignal) = AsyncStream<Int64>.makeStream()

    init(_ body: @escaping @Sendable (LeasedJob, JobLife) async throws(JobError) -> JobResult) {
      self.body = body
    }

    func process(_ job: LeasedJob, _ life: JobLife) async throws(JobError) -> JobResult {
      startedSignal.yield(job.id)
      return try await body(job, life)
    }
  }

  /// Keeps every outcome it is asked to write and every object handed to collection.
  final class Writer: OutcomeWriter {
    let written = Mutex<[Int64: JobOutcome<JobResult>]>([:])
    let unclaimed = Mutex<[String]>([])

    func record(_ job: LeasedJob, _ outcome: JobOutcome<JobResult>) async -> WriteAnswer? {
      written.withLock { $0[job.id] = outcome }
      return .written
    }

    func releaseUnclaimed(_ storageKeys: [String]) async {
      unclaimed.withLock { $0 += storageKeys }
    }
  }

  static let made = JobResult(variants: [
    VariantRecord(
      name: "thumb", width: 100, height: 75, format: "jpeg", bytes: 900, storageKey: "ab/cd/x.jpg")
  ])

  func runner(slots: Int = 1, _ handler: Handler, _ writer: Writer) -> JobRunner {
    var settings = JobRunner.Jobs.Settings(slots: slots)
    settings.retryPolicy = RetryPolicy(baseSeconds: 10, capSeconds: 3600, jitter: 0)
    settings.reusePatience = .milliseconds(100)
    return JobRunner(
      settings: settings, handler: handler, completer: writer,
      metrics: WorkerMetrics(factory: NOOPMetricsHandler.instance), logger: Logger(label: "test"))
  }

  func job(_ id: Int64) -> LeasedJob {
    LeasedJob(id: id, sourceURL: "https://origin.test/\(id).jpg", leaseToken: "token\(id)")
  }

  /// Waits (up to 5 s) until `condition` holds.
  func eventually(_ condition: () -> Bool) async -> Bool {
    for _ in 0..<500 {
      if condition() { return true }
      try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
  }

  @Test func aJobsResultIsWrittenAndTheJobLetGo() async {
    let writer = Writer()
    let runner = runner(Handler { _, _ in Self.made }, writer)
    await withDiscardingTaskGroup { group in runner.start([job(1)], in: &group) }
    #expect(writer.written.withLock { $0 } == [1: .succeeded(Self.made)])
    #expect(runner.held == 0)
  }

  @Test func aFailureIsWrittenAsTheRetryPolicyDecides() async {
    let writer = Writer()
    let slow = JobError(.timeout, "slow origin")
    let broken = JobError(.corruptImage, "not an image")
    let runner = runner(
      slots: 2, Handler { job, _ throws(JobError) in throw job.id == 1 ? slow : broken }, writer)
    await withDiscardingTaskGroup { group in runner.start([job(1), job(2)], in: &group) }
    #expect(
      writer.written.withLock { $0 } == [
        1: .failed(slow, retryAfter: 10), 2: .failed(broken, retryAfter: nil),
      ])
  }

  @Test func aLeaseLostMidWorkCancelsItWritesNothingAndHandsItsUploadsToCollection() async {
    let writer = Writer()
    let handler = Handler { _, _ in
      // It uploaded, then notices the cancellation only after its blocking call returns.
      try? await Task.sleep(for: .seconds(30))
      return Self.made
    }
    let runner = runner(handler, writer)
    await withDiscardingTaskGroup { group in
      runner.start([job(1)], in: &group)
      var started = handler.started.makeAsyncIterator()
      _ = await started.next()
      runner.heartbeatAnswered(sent: [job(1).lease], extended: [])
    }
    #expect(writer.written.withLock { $0 }.isEmpty)
    #expect(await eventually { writer.unclaimed.withLock { $0 } == ["ab/cd/x.jpg"] })
    #expect(runner.held == 0)
  }

  @Test func theHandBackWritesEveryHeldJobAndAbandonsItsWork() async {
    let writer = Writer()
    let cancelled = Mutex(false)
    let handler = Handler { _, _ throws(JobError) in
      try? await Task.sleep(for: .seconds(30))
      cancelled.withLock { $0 = Task.isCancelled }
      throw JobError(.internalError, "abandoned")
    }
    let runner = runner(slots: 1, handler, writer)
    await withDiscardingTaskGroup { group in
      // Job 1 works, job 2 waits for the slot.
      runner.start([job(1), job(2)], in: &group)
      var started = handler.started.makeAsyncIterator()
      _ = await started.next()
      await runner.handBackAll()
    }
    #expect(writer.written.withLock { $0 } == [1: .handedBack, 2: .handedBack])
    #expect(await eventually { cancelled.withLock { $0 } }, "job 1's work was cancelled")
    #expect(runner.held == 0)
  }

  @Test func aDuplicateWaitsForTheRendererAtMostThePatience() async {
    let writer = Writer()
    let release = OneShot<Void>()
    let waited = Mutex<(Bool, Duration)?>(nil)
    let handler = Handler { job, life in
      if job.id == 1 {
        life.renders("key")
        await release.value
      } else {
        let start = ContinuousClock.now
        let didWait = await life.awaitOthersRendering("key")
        waited.withLock { $0 = (didWait, start.duration(to: .now)) }
      }
      return Self.made
    }
    let runner = runner(slots: 2, handler, writer)
    await withDiscardingTaskGroup { group in
      runner.start([job(1)], in: &group)
      var started = handler.started.makeAsyncIterator()
      _ = await started.next()
      runner.start([job(2)], in: &group)
      #expect(await eventually { waited.withLock { $0 } != nil })
      release.resolve(())
    }
    let (didWait, duration) = waited.withLock { $0 } ?? (false, .zero)
    #expect(didWait && duration >= .milliseconds(100), "job 2 waited out the patience: \(duration)")
    #expect(writer.written.withLock { $0.count } == 2)
  }
}
