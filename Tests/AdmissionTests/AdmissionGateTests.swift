import Synchronization
import TestSupport
import Testing

@testable import Admission

/// The memory gate's waiting, relief and yielding, driven directly (ByteAdmissionTests covers its
/// bookkeeping).
struct AdmissionGateTests {
  /// Two jobs hold their downloaded originals and both wait to decode; nothing is decoding, so nothing
  /// will give memory back. The cache is asked first, then the job second in line lets its original go,
  /// and the first one starts.
  @Test func aStallIsBrokenByTheCacheThenByTheJobsBehind() async throws {
    let gate = AdmissionGate(capacity: 100)
    let reliefAsked = Mutex<[Int]>([])
    gate.onShortfall { bytes in reliefAsked.withLock { $0.append(bytes) } }
    let tookFirst = gate.take(30, orWake: {})  // job 1's original
    let tookSecond = gate.take(30, orWake: {})  // job 2's original
    #expect(tookFirst && tookSecond)
    let first = Task { await gate.acquire(60, held: 30) }  // 30 + 30 + 60 > 100
    // The relief is asked for just after the request is queued, outside the gate's lock: wait for it.
    #expect(await eventually(timeout: 5) { !reliefAsked.withLock { $0.isEmpty } })
    #expect(gate.queuedCount == 1)
    #expect(reliefAsked.withLock { $0 } == [20], "the cache is asked for the head's shortfall")
    let second = await gate.acquire(10, held: 30)
    #expect(second == .yield, "second in line, holding an original the head needs")
    #expect(reliefAsked.withLock { $0 } == [20, 20])
    gate.give(30)  // job 2 lets its original go
    #expect(await first.value == .granted)
    #expect(gate.inUse == 90 && gate.queuedCount == 0)
    gate.release(60)
    gate.give(30)
    #expect(gate.inUse == 0)
  }

  /// While a decode runs, a job behind the head keeps its original: the running decode will give memory
  /// back, and fetching the original again would be waste.
  @Test func noYieldWhileADecodeRuns() async throws {
    let gate = AdmissionGate(capacity: 100)
    #expect(await gate.acquire(50) == .granted)
    let took = gate.take(20, orWake: {})  // the original of the job second in line
    #expect(took)
    let head = Task { await gate.acquire(40) }
    while gate.queuedCount == 0 { await Task.yield() }
    let second = Task { await gate.acquire(10, held: 20) }
    while gate.queuedCount == 1 { await Task.yield() }
    gate.release(50)
    #expect(await head.value == .granted)
    #expect(await second.value == .granted, "it kept its original and its place")
    #expect(gate.inUse == 70)
  }

  /// A paused download is woken when memory is given back, and refused again while the head request's
  /// room is not there.
  @Test func pausedDownloadsAreWokenWhenMemoryComesBack() async throws {
    let gate = AdmissionGate(capacity: 100)
    #expect(await gate.acquire(90) == .granted)
    let woken = Atomic<Int>(0)
    let took = gate.take(20, orWake: { woken.add(1, ordering: .relaxed) })
    #expect(!took && woken.load(ordering: .relaxed) == 0)
    gate.release(90)
    #expect(woken.load(ordering: .relaxed) == 1)
    let tookNow = gate.take(20, orWake: {})
    #expect(tookNow)
  }

  /// Memory kept only while there is room (PlaneRecycler's buffers): taken when it fits and nobody waits,
  /// never waking or relieving anything.
  @Test func takeIfRoomTakesOnlyWhatFitsWhileNobodyWaits() async throws {
    let gate = AdmissionGate(capacity: 100)
    #expect(gate.takeIfRoom(60))
    #expect(!gate.takeIfRoom(50), "over the capacity")
    let waiting = Task { await gate.acquire(50) }
    #expect(await eventually(timeout: 5) { gate.queuedCount == 1 })
    #expect(!gate.takeIfRoom(10), "a request waits: its room first")
    gate.give(60)
    #expect(await waiting.value == .granted)
    #expect(gate.inUse == 50)
  }

  /// Several reliefs are asked in the order given, each for what is still short, until nothing is.
  @Test func reliefsAreAskedInTurnForWhatIsStillShort() async throws {
    let gate = AdmissionGate(capacity: 100)
    let asked = Mutex<[String]>([])
    let took = (0..<3).map { _ in gate.take(30, orWake: {}) }
    #expect(took == [true, true, true])
    gate.onShortfall { bytes in
      asked.withLock { $0.append("buffers \(bytes)") }
      gate.give(30)
    }
    gate.onShortfall { bytes in
      asked.withLock { $0.append("originals \(bytes)") }
      gate.give(30)
    }
    let first = Task { await gate.acquire(60) }  // 90 + 60: 50 short
    #expect(await first.value == .granted)
    #expect(asked.withLock { $0 } == ["buffers 50", "originals 20"])
    asked.withLock { $0.removeAll() }
    gate.release(60)
    let tookAgain = gate.take(60, orWake: {})
    #expect(tookAgain)  // 30 + 60 in use
    let second = Task { await gate.acquire(20) }  // 10 short: the first relief is enough
    #expect(await eventually(timeout: 5) { !asked.withLock { $0.isEmpty } })
    #expect(await second.value == .granted)
    #expect(asked.withLock { $0 } == ["buffers 10"])
  }
}
