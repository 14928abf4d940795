import Foundation
import Synchronization
import Testing

@testable import Blocking

/// Blocking work runs on the pool's own threads, in parallel up to their number, and gives back what it
/// captured as soon as it is done.
@Suite struct BlockingPoolTests {
  @Test func workRunsOnThePoolsThreadsAndReturnsItsResult() async {
    let pool = BlockingPool(threads: 2, name: "test-pool")
    defer { pool.shutdown() }
    // The kernel's name for the thread the work runs on.
    let name = await pool.run {
      (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
    }
    #expect(name.hasPrefix("test-pool-"))
    #expect(await pool.run { 6 * 7 } == 42)
  }

  @Test func aTypedErrorReachesTheCaller() async {
    let pool = BlockingPool(threads: 1, name: "test-pool")
    defer { pool.shutdown() }
    await #expect(throws: Refused(code: 7)) {
      try await pool.run { () throws(Refused) -> Int in throw Refused(code: 7) }
    }
  }

  /// Four calls that each block 300 ms take about 300 ms on four threads, not 1.2 s: no call waits
  /// for another, whatever Swift's cooperative pool has (one thread per core).
  @Test func blockingCallsRunInParallelUpToTheThreadCount() async {
    let pool = BlockingPool(threads: 4, name: "test-pool")
    defer { pool.shutdown() }
    let started = ContinuousClock.now
    await withTaskGroup(of: Void.self) { group in
      for _ in 0..<4 {
        group.addTask {
          await pool.run { _ = usleep(300_000) }
        }
      }
    }
    #expect(started.duration(to: .now) < .milliseconds(1000))
  }

  /// What a piece of work captured (an original's bytes, say) goes as soon as the work has run, not
  /// when the queue is next compacted.
  @Test func capturedValuesAreReleasedOnceTheWorkHasRun() async {
    let pool = BlockingPool(threads: 1, name: "test-pool")
    defer { pool.shutdown() }
    weak var released: Payload?
    do {
      let payload = Payload()
      released = payload
      await pool.run { withExtendedLifetime(payload) {} }
    }
    #expect(await eventuallyNil { released })
  }

  @Test func workQueuedBeforeAShutdownStillRuns() async {
    let pool = BlockingPool(threads: 1, name: "test-pool")
    let done = Counter()
    await withTaskGroup(of: Void.self) { group in
      for _ in 0..<8 {
        group.addTask {
          await pool.run {
            _ = usleep(10_000)
            done.value.add(1, ordering: .relaxed)
          }
        }
      }
      try? await Task.sleep(for: .milliseconds(20))
      pool.shutdown()
    }
    #expect(done.value.load(ordering: .relaxed) == 8)
  }

  /// The closure's last reference goes when the pool thread drops it, just after the caller resumes.
  private func eventuallyNil(_ value: () -> AnyObject?) async -> Bool {
    for _ in 0..<100 where value() != nil { try? await Task.sleep(for: .milliseconds(10)) }
    return value() == nil
  }
}

private struct Refused: Error, Equatable {
  var code: Int
}

private final class Payload: Sendable {}

private final class Counter: Sendable {
  let value = Atomic<Int>(0)
}
