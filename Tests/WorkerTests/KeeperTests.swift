import Logging
import Queue
import ServiceLifecycleTestKit
import Synchronization
import Testing
import ThumbCore

@testable import Worker

/// The keeper with statements of the test's own, stopped as its group would stop it: no database.
@Suite struct KeeperTests {
  typealias Fakes = ServiceFakes

  /// A database that keeps every statement it is asked to run (by name, in order). Its schema is
  /// `schema`; the first `unreachable` schema checks fail as a lost connection; heartbeats do not extend
  /// the leases of `lost`; the first rescue waits for `rescueGate` when there is one.
  final class Statements: KeeperStatements {
    struct State {
      var calls: [String] = []
      var schema: String? = SchemaRequirement.version
      var unreachable = 0
      var lost: Set<Int64> = []
      var announced: [(stopping: Bool, watchers: Int)] = []
      var heartbeats: [(leases: [Int64: String], leaseSeconds: Double)] = []
      var pruned: [(statement: String, olderThan: Double, batchSize: Int, maxBatches: Int)] = []
      var sampleAges: [Double] = []
      var withdrawn: [String] = []
    }

    let state = Mutex(State())
    let rescueGate: OneShot<Void>?

    init(rescueGate: OneShot<Void>? = nil, _ change: (inout State) -> Void = { _ in }) {
      self.rescueGate = rescueGate
      state.withLock { change(&$0) }
    }

    var calls: [String] { state.withLock { $0.calls } }

    private func called(_ name: String) { state.withLock { $0.calls.append(name) } }

    func schemaVersion() async throws(PostgresError) -> String? {
      let result = state.withLock { state -> Result<String?, PostgresError> in
        state.calls.append("schemaVersion")
        guard state.unreachable == 0 else {
          state.unreachable -= 1
          return .failure(PostgresError(kind: .connection, message: "connection refused"))
        }
        return .success(state.schema)
      }
      return try result.get()
    }

    func announce(
      _ worker: WorkerRecord, counters: WorkerCounters, stopping: Bool, watchers: Int
    ) async throws(PostgresError) -> Bool {
      state.withLock {
        $0.calls.append("announce")
        $0.announced.append((stopping, watchers))
      }
      return true
    }

    func withdraw(workerID: String) async throws(PostgresError) {
      state.withLock {
        $0.calls.append("withdraw")
        $0.withdrawn.append(workerID)
      }
    }

    func heartbeat(
      _ leases: [(id: Int64, token: String)], leaseSeconds: Double
    ) async throws(PostgresError) -> Set<Int64> {
      state.withLock { state in
        state.calls.append("heartbeat")
        state.heartbeats.append(
          (Dictionary(uniqueKeysWithValues: leases.map { ($0.id, $0.token) }), leaseSeconds))
        return Set(leases.map(\.id)).subtracting(state.lost)
      }
    }

    func rescueExpired() async throws(PostgresError) -> [Int64] {
      let first = state.withLock { state in
        defer { state.calls.append("rescueExpired") }
        return !state.calls.contains("rescueExpired")
      }
      if first, let rescueGate { await rescueGate.value }
      return []
    }

    func promoteDue() async throws(PostgresError) -> Int {
      called("promoteDue")
      return 0
    }

    func expireWorkers() async throws(PostgresError) -> Int {
      called("expireWorkers")
      return 0
    }

    private func pruned(_ statement: String, _ olderThan: Double, _ batchSize: Int, _ maxBatches: Int) -> Int
    {
      state.withLock {
        $0.calls.append(statement)
        $0.pruned.append((statement, olderThan, batchSize, maxBatches))
      }
      return 0
    }

    func prune(olderThanSeconds: Double, batchSize: Int, maxBatches: Int) async throws(PostgresError) -> Int {
      pruned("prune", olderThanSeconds, batchSize, maxBatches)
    }

    func pruneOriginals(
      olderThanSeconds: Double, batchSize: Int, maxBatches: Int
    ) async throws(PostgresError) -> Int {
      pruned("pruneOriginals", olderThanSeconds, batchSize, maxBatches)
    }

    func pruneEvents(
      olderThanSeconds: Double, batchSize: Int, maxBatches: Int
    ) async throws(PostgresError) -> Int {
      pruned("pruneEvents", olderThanSeconds, batchSize, maxBatches)
    }

    func queueDepth(maxAge: Double) async throws(PostgresError) -> QueueDepth {
      state.withLock {
        $0.calls.append("queueDepth")
        $0.sampleAges.append(maxAge)
      }
      return QueueDepth(queued: 3, ready: 2, running: 1, oldestReadySeconds: 0)
    }
  }

  /// A lease of 0.6 s: heartbeats, housekeeping, sampling and promotion every 0.2 s.
  static func config(retention: Double = 3600, eventRetention: Double = 0) -> WorkerConfig {
    var config = WorkerConfig()
    config.concurrency = 2
    config.leaseSeconds = 0.6
    config.housekeepingInterval = 0.2
    config.queueSampleInterval = 0.2
    config.pollInterval = 0.2
    config.retentionSeconds = retention
    config.eventRetentionSeconds = eventRetention
    return config
  }

  /// Runs a keeper on `statements` while `body` runs, then stops it as its group would.
  func withKeeper(
    _ statements: Statements, config: WorkerConfig = config(), handler: Fakes.Handler = Fakes.Handler(),
    _ body: (ServiceContext, Fakes.Switch) async -> Void
  ) async {
    let context = Fakes.context(config, handler: handler)
    let listener = Fakes.Switch()
    let record = WorkerRecord(
      id: config.workerID, host: "test", pid: 1, version: "test", concurrency: config.concurrency,
      memoryBudget: config.memoryBudget, leaseSeconds: config.leaseSeconds)
    let keeper = Keeper(
      queue: statements, context: context, record: record, role: FleetRole(listeners: [listener]),
      activity: ServiceActivity().reporter(for: "keeper"))
    await testGracefulShutdown { trigger in
      let run = Task { try? await keeper.run() }
      await body(context, listener)
      trigger.triggerGracefulShutdown()
      await run.value
    }
  }

  @Test func theStartUpChecksTheSchemaAnnouncesAndRescuesBeforeTheProducerLeases() async {
    let statements = Statements()
    await withKeeper(statements) { context, _ in
      #expect(await context.readiness.waitUntilStarted())
      #expect(Array(statements.calls.prefix(3)) == ["schemaVersion", "announce", "rescueExpired"])
      let announced = statements.state.withLock { $0.announced.first }
      #expect(announced?.stopping == false && announced?.watchers == JobQueue.fleetWatchers)
    }
  }

  @Test func aDatabaseAwayIsTriedAgainAfterABackoffUntilItAnswers() async {
    let statements = Statements { $0.unreachable = 1 }
    let start = ContinuousClock.now
    await withKeeper(statements) { context, _ in
      #expect(await context.readiness.waitUntilStarted())
      // KeeperSchedule.StartUp's backoff: half a second after the first failure.
      #expect(start.duration(to: .now) >= .milliseconds(500))
      #expect(Array(statements.calls.prefix(3)) == ["schemaVersion", "schemaVersion", "announce"])
    }
  }

  @Test func aSchemaTooOldKeepsTheWorkerUnannouncedAndAStopGivesTheStartUpUp() async {
    let statements = Statements { $0.schema = "0001" }
    await withKeeper(statements) { _, _ in
      #expect(await Fakes.eventually { statements.calls.contains("schemaVersion") })
      try? await Task.sleep(for: .milliseconds(100))
    }
    #expect(!statements.calls.contains("announce"))
    #expect(!statements.calls.contains("withdraw"), "nothing was announced, nothing is withdrawn")
  }

  @Test func aStopDuringTheFirstRescueWithdrawsTheRegistrationJustMade() async {
    let gate = OneShot<Void>()
    let statements = Statements(rescueGate: gate)
    await withKeeper(statements) { context, _ in
      #expect(await Fakes.eventually { statements.calls.contains("rescueExpired") })
      context.shutdown.request(reason: "test")
      gate.resolve(())
      #expect(await context.readiness.waitUntilStarted() == false, "the producer is told not to lease")
      #expect(await Fakes.eventually { statements.calls.last == "withdraw" })
    }
    #expect(statements.state.withLock { $0.withdrawn.count } == 1, "withdrawn in the start-up, not again")
  }

  @Test func heartbeatsExtendTheHeldLeasesAndAbandonTheJobsWhoseLeaseWasLost() async {
    let statements = Statements { $0.lost = [2] }
    let handler = Fakes.Handler()
    await withKeeper(statements, handler: handler) { context, listener in
      let jobs = Task {
        await withDiscardingTaskGroup { group in
          context.runner.start([Fakes.job(1), Fakes.job(2)], in: &group)
        }
      }
      #expect(await Fakes.eventually { statements.state.withLock { !$0.heartbeats.isEmpty } })
      let first = statements.state.withLock { $0.heartbeats.first }
      #expect(first?.leases == [1: "token1", 2: "token2"])
      #expect(first?.leaseSeconds == context.config.leaseSeconds)
      // Job 2's lease was not extended: its work is abandoned and nothing of it is written.
      #expect(await Fakes.eventually { context.runner.held == 1 })
      #expect(context.metrics.counters.leaseLost == 1)
      #expect(
        await Fakes.eventually {
          statements.state.withLock { $0.heartbeats.last?.leases.keys.sorted() } == [1]
        })
      // Each heartbeat refreshes the registry row, whose answer says whether this worker watches.
      #expect(listener.watches.withLock { $0.first } == true)
      // Job 2 too, so that the test ends should its work not have been abandoned.
      handler.finish(1)
      handler.finish(2)
      await jobs.value
    }
  }

  @Test func aStopRequestLeavesOnlyHeartbeatsThenTheWorkerIsWithdrawn() async {
    let statements = Statements()
    let handler = Fakes.Handler()
    let config = Self.config()
    await withKeeper(statements, config: config, handler: handler) { context, _ in
      #expect(await context.readiness.waitUntilStarted())
      let jobs = Task {
        await withDiscardingTaskGroup { group in context.runner.start([Fakes.job(1)], in: &group) }
      }
      context.shutdown.request(reason: "test")
      try? await Task.sleep(for: .milliseconds(50))
      let before = statements.calls.count
      try? await Task.sleep(for: .milliseconds(500))
      let during = Set(statements.calls.dropFirst(before))
      #expect(during == ["heartbeat", "announce"], "\(during)")
      #expect(statements.state.withLock { $0.announced.last?.stopping } == true)
      handler.finish(1)
      await jobs.value
    }
    #expect(statements.calls.last == "withdraw")
    #expect(statements.state.withLock { $0.withdrawn } == [config.workerID])
  }

  @Test func housekeepingExpiresWorkersAndPrunesJobsAndOriginalsPastTheRetention() async {
    let statements = Statements()
    await withKeeper(statements, config: Self.config(retention: 3600, eventRetention: 0)) { _, _ in
      #expect(await Fakes.eventually { statements.calls.contains("pruneOriginals") })
    }
    #expect(statements.calls.contains("expireWorkers"))
    let pruned = statements.state.withLock { $0.pruned }
    #expect(!pruned.contains { $0.statement == "pruneEvents" }, "event retention is off")
    #expect(pruned.allSatisfy { $0.olderThan == 3600 })
    #expect(
      pruned.allSatisfy {
        $0.batchSize == JobQueue.pruneBatchSize && $0.maxBatches == JobQueue.pruneMaxBatches
      })
  }

  @Test func housekeepingPrunesOnlyEventsWhenOnlyTheirRetentionIsOn() async {
    let statements = Statements()
    await withKeeper(statements, config: Self.config(retention: 0, eventRetention: 60)) { _, _ in
      #expect(await Fakes.eventually { statements.calls.contains("pruneEvents") })
    }
    let pruned = statements.state.withLock { $0.pruned }
    #expect(pruned.allSatisfy { $0.statement == "pruneEvents" && $0.olderThan == 60 })
  }

  @Test func theQueueIsSampledAcceptingTheFleetsYoungerCountAndDueJobsArePromoted() async {
    let statements = Statements()
    await withKeeper(statements) { _, _ in
      #expect(await Fakes.eventually { statements.calls.filter { $0 == "queueDepth" }.count >= 2 })
      #expect(statements.calls.contains("promoteDue"))
    }
    // A count another worker took within 80% of this worker's interval is as good as its own.
    #expect(statements.state.withLock { $0.sampleAges }.allSatisfy { abs($0 - 0.2 * 0.8) < 1e-9 })
  }
}
