import Logging
import Queue
import ServiceLifecycleTestKit
import Storage
import Synchronization
import Testing
import ThumbCore

@testable import Worker

/// Collection passes, and the collector that runs them, with statements and a storage of the test's
/// own: no database, no storage server.
@Suite struct CollectorTests {
  typealias Fakes = ServiceFakes

  /// Collection's statements, answering in turn from the lists the test gives (then: nothing marked,
  /// nothing claimed, nothing waiting, nothing settled), and keeping what they were asked, in order.
  final class Statements: CollectionStatements {
    struct State {
      var marks: [(marked: Int, kept: Int)] = []
      var claims: [[String]] = []
      var waiting: [Int] = []
      /// Marked objects wait for their fence however often the pass asks.
      var alwaysWaiting = false
      var settles: [Int] = []

      var calls: [String] = []
      var markedWith: [(graceSeconds: Double, batch: Int)] = []
      var claimedWith: [(workerID: String, batch: Int, claimSeconds: Double, at: ContinuousClock.Instant)] =
        []
      var deleted: [[String]] = []
      var failed: [[(key: String, error: String, retryAfter: Double)]] = []
    }

    let state: Mutex<State>

    init(_ change: (inout State) -> Void = { _ in }) {
      var state = State()
      change(&state)
      self.state = Mutex(state)
    }

    var calls: [String] { state.withLock { $0.calls } }

    func gcMark(graceSeconds: Double, batch: Int) async throws(PostgresError) -> (marked: Int, kept: Int) {
      state.withLock { state in
        state.calls.append("mark")
        state.markedWith.append((graceSeconds, batch))
        return state.marks.isEmpty ? (0, 0) : state.marks.removeFirst()
      }
    }

    func gcFence() async throws(PostgresError) -> Int {
      state.withLock { $0.calls.append("fence") }
      return 0
    }

    func gcClaim(workerID: String, batch: Int, claimSeconds: Double) async throws(PostgresError) -> [String] {
      state.withLock { state in
        state.calls.append("claim")
        state.claimedWith.append((workerID, batch, claimSeconds, .now))
        return state.claims.isEmpty ? [] : state.claims.removeFirst()
      }
    }

    func gcWaiting() async throws(PostgresError) -> Int {
      state.withLock { state in
        state.calls.append("waiting")
        if state.alwaysWaiting { return 1 }
        return state.waiting.isEmpty ? 0 : state.waiting.removeFirst()
      }
    }

    func gcDeleted(_ keys: [String]) async throws(PostgresError) -> Int {
      state.withLock {
        $0.calls.append("deleted")
        $0.deleted.append(keys)
      }
      return keys.count
    }

    func gcFailed(
      _ failures: [(key: String, error: String, retryAfter: Double)]
    ) async throws(PostgresError) -> Int {
      state.withLock {
        $0.calls.append("failed")
        $0.failed.append(failures)
      }
      return failures.count
    }

    func gcSettle(batch: Int) async throws(PostgresError) -> Int {
      state.withLock { state in
        state.calls.append("settle")
        return state.settles.isEmpty ? 0 : state.settles.removeFirst()
      }
    }
  }

  /// A storage whose deletes take `delay` and fail for the keys in `failing`; it counts the deletes in
  /// flight at once.
  final class Store: ThumbnailStore {
    let failing: Set<String>
    let delay: Duration
    let longestOperationSeconds: Double
    let deleted = Mutex<[String]>([])
    let inFlight = Mutex((now: 0, most: 0))

    init(failing: Set<String> = [], delay: Duration = .zero, longestOperationSeconds: Double = 0) {
      self.failing = failing
      self.delay = delay
      self.longestOperationSeconds = longestOperationSeconds
    }

    func delete(key: String) async throws(JobError) {
      inFlight.withLock { $0 = ($0.now + 1, max($0.most, $0.now + 1)) }
      defer { inFlight.withLock { $0.now -= 1 } }
      if delay > .zero { try? await Task.sleep(for: delay) }
      if failing.contains(key) { throw JobError(.storageFailed, "503 Slow Down") }
      deleted.withLock { $0.append(key) }
    }

    func put(key: String, bytes: [UInt8], contentType: String) async throws(JobError) -> PutAnswer {
      .uploaded
    }
    func check() async throws(JobError) {}
    func get(key: String) async throws(JobError) -> [UInt8]? { nil }
    func list(after key: String?, limit: Int) async throws(JobError) -> StoredObjects {
      StoredObjects(objects: [], next: nil)
    }
    func location(of key: String) -> String { "test://\(key)" }
    var identity: String { "test://" }
  }

  func pass(
    _ statements: Statements, _ store: Store = Store(),
    settings: CollectionSettings = CollectionSettings(
      graceSeconds: 300), stopping: @escaping @Sendable () -> Bool = { false }
  ) async throws -> CollectionPass.Report {
    try await CollectionPass(
      queue: statements, store: store, workerID: "w1", settings: settings, stopping: stopping
    ).run()
  }

  @Test func aPassMarksFencesClaimsDeletesRecordsAndSettlesInThatOrder() async throws {
    let statements = Statements {
      $0.marks = [(2, 1)]
      $0.claims = [["a", "b"]]
      $0.settles = [1]
    }
    let store = Store(failing: ["b"])
    let report = try await pass(statements, store)
    #expect(
      statements.calls == ["mark", "fence", "claim", "deleted", "failed", "claim", "waiting", "settle"])
    let state = statements.state.withLock { $0 }
    #expect(state.markedWith.first?.graceSeconds == 300 && state.markedWith.first?.batch == 100)
    #expect(state.claimedWith.first?.workerID == "w1" && state.claimedWith.first?.claimSeconds == 60)
    // What the storage deleted is recorded; what it did not is tried again after the retry delay.
    #expect(state.deleted.first == ["a"])
    let failure = state.failed.first?.first
    #expect(failure?.key == "b" && failure?.error == "503 Slow Down" && failure?.retryAfter == 30)
    #expect(store.deleted.withLock { $0 } == ["a"])
    #expect(
      report.marked == 2 && report.kept == 1 && report.deleted == 1 && report.failed == 1
        && report.events == 1)
    #expect(report.deletedKeys == ["a"])
    #expect(report.firstFailure?.code == .storageFailed)
  }

  @Test func markingGoesOnWhileBatchesComeBackFullUpToWhatAPassDeletes() async throws {
    var settings = CollectionSettings(graceSeconds: 300)
    settings.batch = 2
    // Marked and kept together fill a batch: mark again, until a batch is short.
    let short = Statements { $0.marks = [(2, 0), (1, 1), (1, 0), (2, 0)] }
    _ = try await pass(short, settings: settings)
    #expect(short.calls.filter { $0 == "mark" }.count == 3)

    // Or until as many are marked as a pass deletes at most.
    settings.maxPerPass = 3
    let capped = Statements { $0.marks = [(2, 0), (2, 0), (2, 0)] }
    let report = try await pass(capped, settings: settings)
    #expect(capped.calls.filter { $0 == "mark" }.count == 2)
    #expect(report.marked == 4)
  }

  @Test func jobsLeasedBeforeTheFenceAreWaitedForThenTheirObjectsClaimed() async throws {
    let statements = Statements {
      $0.claims = [[], ["a"]]
      $0.waiting = [1]
    }
    let report = try await pass(statements)
    #expect(
      statements.calls == [
        "mark", "fence", "claim", "waiting", "claim", "deleted", "failed", "claim", "waiting", "settle",
      ])
    let claims = statements.state.withLock { $0.claimedWith.map(\.at) }
    #expect(claims[0].duration(to: claims[1]) >= .milliseconds(250), "it waited before claiming again")
    #expect(report.deletedKeys == ["a"])
  }

  @Test func theWaitForTheFenceEndsAtItsDeadline() async throws {
    let statements = Statements { $0.alwaysWaiting = true }
    var settings = CollectionSettings(graceSeconds: 300)
    settings.fenceWaitSeconds = 0.3
    let start = ContinuousClock.now
    let report = try await pass(statements, settings: settings)
    let waited = start.duration(to: .now)
    #expect(waited >= .milliseconds(300) && waited < .seconds(3), "\(waited)")
    #expect(report.deleted == 0 && statements.calls.last == "settle")
  }

  @Test func deletesRunAFewAtATime() async throws {
    let statements = Statements { $0.claims = [["a", "b", "c", "d", "e"]] }
    var settings = CollectionSettings(graceSeconds: 300)
    settings.concurrency = 2
    let store = Store(delay: .milliseconds(50))
    let report = try await pass(statements, store, settings: settings)
    #expect(store.inFlight.withLock { $0.most } == 2)
    #expect(report.deletedKeys == ["a", "b", "c", "d", "e"])
  }

  @Test func noDeleteStartsOnceTheClaimsWindowHasPassed() async throws {
    let statements = Statements { $0.claims = [["a", "b"]] }
    // A claim of 5 s leaves no time to start a delete (the longest delete plus 5 s must remain).
    var settings = CollectionSettings(graceSeconds: 300)
    settings.claimSeconds = 5
    let store = Store()
    let report = try await pass(statements, store, settings: settings)
    #expect(store.deleted.withLock { $0 }.isEmpty)
    #expect(report.deleted == 0 && report.failed == 0)
    #expect(statements.state.withLock { $0.deleted.first } == [], "claimed, not deleted: left to its claim")
  }

  @Test func aPassDeletesAtMostItsShareAndAStoppingWorkerClaimsNothing() async throws {
    var settings = CollectionSettings(graceSeconds: 300)
    settings.maxPerPass = 2
    let capped = Statements { $0.claims = [["a", "b"], ["c"]] }
    let report = try await pass(capped, settings: settings)
    #expect(report.deletedKeys == ["a", "b"])
    #expect(capped.calls.filter { $0 == "claim" }.count == 1, "c waits for the next pass")

    let stopping = Statements { $0.claims = [["a"]] }
    _ = try await pass(stopping, stopping: { true })
    #expect(stopping.calls == ["mark", "fence", "settle"])
  }

  @Test func settlingGoesOnWhileBatchesComeBackFull() async throws {
    let statements = Statements { $0.settles = [100, 100, 3] }
    let report = try await pass(statements)
    #expect(statements.calls.filter { $0 == "settle" }.count == 3)
    #expect(report.events == 203)
  }

  /// Runs a collector on `statements` while `body` runs, then stops it as its group would.
  func withCollector(
    _ statements: Statements, store: Store, config: WorkerConfig, _ body: (ServiceContext) async -> Void
  ) async {
    let context = Fakes.context(config)
    let collector = Collector(
      queue: statements, store: store, context: context,
      activity: ServiceActivity().reporter(for: "collector"))
    await testGracefulShutdown { trigger in
      let run = Task { try? await collector.run() }
      await body(context)
      trigger.triggerGracefulShutdown()
      await run.value
    }
  }

  @Test func theCollectorRunsPassesOnceTheWorkerHasStartedWithClaimsSizedForItsStorage() async {
    var config = WorkerConfig()
    config.gcIntervalSeconds = 0.1
    config.eraseGraceSeconds = 120
    config.leaseSeconds = 60
    let statements = Statements()
    // Deletes of up to 30 s: a claim must leave that twice, plus 10 s.
    let store = Store(longestOperationSeconds: 30)
    await withCollector(statements, store: store, config: config) { context in
      try? await Task.sleep(for: .milliseconds(200))
      #expect(statements.calls.isEmpty, "no pass before the worker has started")
      context.readiness.started()
      #expect(await Fakes.eventually { statements.calls.filter { $0 == "mark" }.count >= 2 })
    }
    let state = statements.state.withLock { $0 }
    #expect(state.markedWith.allSatisfy { $0.graceSeconds == 120 })
    #expect(state.claimedWith.allSatisfy { $0.claimSeconds == 70 && $0.workerID == config.workerID })
  }

  @Test func collectionOffRunsNoPass() async {
    var config = WorkerConfig()
    config.gcIntervalSeconds = 0
    let statements = Statements()
    await withCollector(statements, store: Store(), config: config) { context in
      context.readiness.started()
      try? await Task.sleep(for: .milliseconds(300))
    }
    #expect(statements.calls.isEmpty)
  }
}
