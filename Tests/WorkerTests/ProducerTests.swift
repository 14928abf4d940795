import Logging
import Queue
import Synchronization
import Testing
import ThumbCore

@testable import Worker

/// The producer with lease statements of the test's own and a runner whose jobs end when the test says:
/// no database.
@Suite struct ProducerTests {
  typealias Fakes = ServiceFakes

  /// A queue of `available` jobs (ids from 1) that keeps every statement it is asked to run. The first
  /// leases throw `failures`; each rescue answers the next of `rescues` (then nothing).
  final class Statements: LeaseStatements {
    struct State {
      var available: Int
      var failures: [PostgresError] = []
      var rescues: [[Int64]] = []
      var nextID: Int64 = 1
      /// Every lease statement: its limit, when it came, and what it named.
      var leases: [(limit: Int, at: ContinuousClock.Instant, workerID: String, siblings: Int)] = []
      var reclaims: [(workerID: String, held: [Int64])] = []
      var rescueCount = 0
      var promotions = 0
    }

    let state: Mutex<State>

    init(available: Int = .max, failures: [PostgresError] = [], rescues: [[Int64]] = []) {
      state = Mutex(State(available: available, failures: failures, rescues: rescues))
    }

    var limits: [Int] { state.withLock { $0.leases.map(\.limit) } }
    var leaseCount: Int { state.withLock { $0.leases.count } }

    func empty() { state.withLock { $0.available = 0 } }

    func lease(
      workerID: String, limit: Int, leaseSeconds: Double, siblings: Int
    ) async throws(PostgresError) -> [LeasedJob] {
      let result = state.withLock { state -> Result<[LeasedJob], PostgresError> in
        state.leases.append((limit, .now, workerID, siblings))
        if !state.failures.isEmpty { return .failure(state.failures.removeFirst()) }
        let count = min(limit, state.available)
        state.available -= count
        defer { state.nextID += Int64(count) }
        return .success((0..<Int64(count)).map { Fakes.job(state.nextID + $0) })
      }
      return try result.get()
    }

    func reclaimUnheld(workerID: String, held: [Int64]) async throws(PostgresError) -> [Int64] {
      state.withLock { $0.reclaims.append((workerID, held)) }
      return []
    }

    func rescueExpired() async throws(PostgresError) -> [Int64] {
      state.withLock { state in
        state.rescueCount += 1
        return state.rescues.isEmpty ? [] : state.rescues.removeFirst()
      }
    }

    func promoteDue() async throws(PostgresError) -> Int {
      state.withLock { $0.promotions += 1 }
      return 0
    }
  }

  /// Two slots and one job read ahead (the original cache is on); idle waits a minute, so that only a
  /// wake-up can end one within a test.
  static func config(grace: Double = 0.2, drain: Bool = false, poll: Double = 60) -> WorkerConfig {
    var config = WorkerConfig()
    config.concurrency = 2
    config.pollInterval = poll
    config.shutdownGrace = grace
    config.drain = drain
    return config
  }

  struct Running {
    let statements: Statements
    let handler: Fakes.Handler
    let writer: Fakes.Writer
    let context: ServiceContext
    let task: Task<Void, Never>

    /// Asks the producer to stop and waits for it to end.
    func stop() async {
      context.shutdown.request(reason: "test")
      await task.value
    }
  }

  /// A producer running on `statements`; `started`: the start-up has ended (the keeper's part).
  func run(
    _ statements: Statements, config: WorkerConfig = config(), handler: Fakes.Handler = Fakes.Handler(),
    started: Bool = true
  ) -> Running {
    let writer = Fakes.Writer()
    let context = Fakes.context(config, handler: handler, writer: writer)
    if started { context.readiness.started() }
    let producer = Producer(
      queue: statements, role: FleetRole(listeners: []), context: context,
      activity: ServiceActivity().reporter(for: "producer"))
    let task = Task { _ = try? await producer.run() }
    return Running(
      statements: statements, handler: handler, writer: writer, context: context, task: task)
  }

  @Test func itLeasesWhatTheSlotsAndTheReadAheadTakeAndStartsIt() async {
    let producer = run(Statements())
    // Two slots: a lease of two, then one more for the read-ahead; then the worker is full.
    #expect(await Fakes.eventually { producer.statements.limits == [2, 1] })
    #expect(await Fakes.eventually { producer.handler.started.withLock { $0.sorted() } == [1, 2] })
    try? await Task.sleep(for: .milliseconds(200))
    #expect(producer.statements.limits == [2, 1], "no lease while every slot and the read-ahead are taken")
    #expect(producer.context.runner.held == 3)
    let asked = producer.statements.state.withLock { $0.leases.first }
    #expect(asked?.workerID == producer.context.config.workerID)
    #expect(asked?.siblings == producer.context.config.leaseSiblings)

    // A job ends: its slot goes to the job read ahead, and one more is leased at once (not after the
    // minute's poll).
    producer.handler.finish(1)
    #expect(await Fakes.eventually { producer.statements.limits == [2, 1, 1] })
    #expect(await Fakes.eventually { producer.handler.started.withLock { $0.sorted() } == [1, 2, 3] })
    #expect(producer.writer.written.withLock { $0[1] } == .succeeded(JobResult(variants: [])))
    await producer.stop()
  }

  @Test func anEmptyQueueIsLookedAtAgainOnlyWhenWoken() async {
    let producer = run(Statements(available: 0))
    #expect(await Fakes.eventually { producer.statements.leaseCount == 1 })
    try? await Task.sleep(for: .milliseconds(300))
    #expect(producer.statements.leaseCount == 1, "an empty lease waits for a wake-up or the poll")
    // What the listener does on a notification.
    producer.context.runner.notified.raise()
    producer.context.runner.wake.signal()
    #expect(await Fakes.eventually { producer.statements.leaseCount == 2 })
    await producer.stop()
  }

  @Test func aStopEndsLeasingWaitsOutTheGraceAndHandsBackWhatStillRuns() async {
    let producer = run(Statements(), config: Self.config(grace: 0.3))
    #expect(await Fakes.eventually { producer.context.runner.held == 3 })
    let stopped = ContinuousClock.now
    producer.context.shutdown.request(reason: "test")
    // Job 1 ends within the grace; its outcome is written as usual, and no job is leased for its slot.
    try? await Task.sleep(for: .milliseconds(50))
    producer.handler.finish(1)
    await producer.task.value
    #expect(stopped.duration(to: .now) >= .milliseconds(300), "the others had the whole grace")
    #expect(producer.statements.limits == [2, 1])
    #expect(
      producer.writer.written.withLock { $0 } == [
        1: .succeeded(JobResult(variants: [])), 2: .handedBack, 3: .handedBack,
      ])
    #expect(producer.context.runner.held == 0)
  }

  @Test func nothingIsLeasedBeforeTheStartUpEnds() async {
    let producer = run(Statements(), started: false)
    try? await Task.sleep(for: .milliseconds(200))
    #expect(producer.statements.leaseCount == 0)
    producer.context.readiness.started()
    #expect(await Fakes.eventually { producer.statements.leaseCount > 0 })
    await producer.stop()
  }

  @Test func aStartUpGivenUpEndsTheProducerWithoutALease() async {
    let producer = run(Statements(), started: false)
    producer.context.readiness.abandoned()
    await producer.task.value
    #expect(producer.statements.leaseCount == 0)
  }

  @Test func aFailedLeaseIsTriedAgainAfterTheBackoffWithoutALookForUnheldJobs() async {
    let statements = Statements(failures: [PostgresError(kind: .query, message: "canceling statement")])
    let producer = run(statements)
    #expect(await Fakes.eventually { statements.leaseCount >= 2 })
    let leases = statements.state.withLock { $0.leases }
    // The first failure waits a quarter second (ProducerPacing.Settings.leaseBackoff).
    #expect(leases[0].at.duration(to: leases[1].at) >= .milliseconds(250))
    #expect(statements.state.withLock { $0.reclaims.isEmpty }, "a query error is an answer: nothing leased")
    await producer.stop()
  }

  @Test func aLeaseWhoseAnswerWasLostIsFollowedByALookForJobsLeasedAnyway() async {
    let statements = Statements(
      failures: [PostgresError(kind: .connection, message: "server closed the connection")])
    // A full worker looks again at its poll (the pacing's wait does not shorten for the look).
    let producer = run(statements, config: Self.config(poll: 0.2))
    #expect(await Fakes.eventually { statements.state.withLock { !$0.reclaims.isEmpty } })
    #expect(statements.state.withLock { $0.reclaims.first?.workerID } == producer.context.config.workerID)
    // Leasing goes on, and the look is made again a second later, for the jobs this worker does not hold.
    #expect(await Fakes.eventually { producer.context.runner.held == 3 })
    #expect(await Fakes.eventually { statements.state.withLock { $0.reclaims.count } >= 2 })
    #expect(statements.state.withLock { $0.reclaims.dropFirst().first?.held.sorted() } == [1, 2, 3])
    await producer.stop()
  }

  @Test func aDrainingWorkerRescuesWhileThatFindsJobsThenEnds() async {
    // The first rescue requeues a job (a dead worker's), the second finds nothing.
    let statements = Statements(available: 0, rescues: [[7]])
    let producer = run(statements, config: Self.config(drain: true))
    await producer.task.value
    let state = statements.state.withLock { ($0.leases.count, $0.rescueCount, $0.promotions) }
    #expect(state == (2, 2, 2), "lease, rescue, lease again, rescue: drained")
    #expect(!producer.context.shutdown.isRequested, "it ended by itself")
  }

}
