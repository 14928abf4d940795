import Blocking
import Foundation
import Queue
import Synchronization
import TestSupport
import Testing

/// Few workers of a fleet listen (every listening backend is woken at each notifying commit of the
/// database): the registry names them, and a listener listens only while told to, holding no connection
/// otherwise, and yields once each time it starts for what it may have missed.
@Suite(.serialized) struct ListenerTests {
  let pool = BlockingPool(threads: 2, name: "listener-test")

  /// The first two running workers by id with a fresh heartbeat watch for the fleet (keep listening while
  /// busy); a stopping worker neither watches nor counts, nor does one whose heartbeat is stale.
  @Test func theFirstTwoRunningWorkersWatchForTheFleet() async throws {
    let database = try TestDatabase.create()
    let queue = JobQueue(client: try await PostgresClient(conninfo: database, pool: pool))
    defer { queue.client.close() }
    func announce(_ id: String, stopping: Bool = false) async throws -> Bool {
      try await queue.announce(
        WorkerRecord(
          id: id, host: "h", pid: 1, version: "1.0.0", concurrency: 2, memoryBudget: 1 << 20, leaseSeconds: 60
        ),
        counters: WorkerCounters(), stopping: stopping)
    }
    #expect(try await announce("c"))
    #expect(try await announce("d"))
    #expect(try await announce("e") == false)  // "c" and "d" come first
    #expect(try await announce("a"))
    #expect(try await announce("d") == false)  // now "a" and "c"
    // A stopping worker does not watch, and the next one takes its place.
    #expect(try await announce("a", stopping: true) == false)
    #expect(try await announce("d"))
    // Nor does a worker count whose heartbeat is older than its lease (it froze, or died).
    try sql(
      database, "UPDATE thumbs.workers SET last_heartbeat_at = now() - interval '2 minutes' WHERE id = 'c'")
    #expect(try await announce("e"))
  }

  @Test func listensOnlyWhileToldAndHoldsNoConnectionOtherwise() async throws {
    let database = try TestDatabase.create()
    let listener = NotificationListener(conninfo: database)
    let heard = Atomic<Int>(0)
    listener.start()
    let counting = Task {
      for await _ in listener.notifications { heard.add(1, ordering: .relaxed) }
    }
    defer {
      listener.stop()
      counting.cancel()
    }
    try await Task.sleep(for: .milliseconds(300))
    #expect(try listenerLastStatement(database) == nil, "not told to listen: no connection")
    #expect(heard.load(ordering: .relaxed) == 0)

    listener.watching(true)
    #expect(try await eventually(timeout: 5) { try listenerLastStatement(database) == "LISTEN thumbs_jobs" })
    // One yield on connecting: what was enqueued before it listened.
    #expect(await eventually(timeout: 2) { heard.load(ordering: .relaxed) == 1 })
    try sql(database, "NOTIFY thumbs_jobs")
    #expect(await eventually(timeout: 2) { heard.load(ordering: .relaxed) == 2 })

    listener.watching(false)
    #expect(try await eventually(timeout: 5) { try listenerLastStatement(database) == nil })
    try sql(database, "NOTIFY thumbs_jobs")
    try await Task.sleep(for: .milliseconds(300))
    #expect(heard.load(ordering: .relaxed) == 2)
    // Told again: nothing changes.
    listener.watching(false)

    listener.watching(true)
    #expect(try await eventually(timeout: 5) { try listenerLastStatement(database) == "LISTEN thumbs_jobs" })
    #expect(await eventually(timeout: 2) { heard.load(ordering: .relaxed) == 3 })
    try sql(database, "NOTIFY thumbs_jobs")
    #expect(await eventually(timeout: 2) { heard.load(ordering: .relaxed) == 4 })
  }
}
