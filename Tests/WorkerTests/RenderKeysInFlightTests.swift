import Foundation
import Testing

@testable import Worker

/// A duplicate that finds its render key being written waits for that outcome, and no longer than its
/// patience. The time bounds are wide (a loaded CI machine) and still tell the two endings apart: a
/// patience of a minute against an end seen within seconds.
@Suite struct RenderKeysInFlightTests {
  @Test func aKeyNobodyHoldsIsSettledAtOnce() async {
    let keys = RenderKeysInFlight(patience: .seconds(60))
    keys.rendered("a", token: "t1")
    #expect(await keys.settled("b") == false, "false: it did not wait")
  }

  @Test func aDuplicateWaitsUntilTheOutcomeIsWritten() async {
    let keys = RenderKeysInFlight(patience: .seconds(60))
    keys.rendered("k", token: "first")
    let waiter = Task { await keys.settled("k") }
    try? await Task.sleep(for: .milliseconds(100))
    #expect(keys.contains("k"))
    let ended = ContinuousClock.now
    keys.ended(token: "first")
    #expect(await waiter.value == true)
    #expect(ended.duration(to: .now) < .seconds(10), "ended by the outcome, not by the patience")
    #expect(!keys.contains("k"))
  }

  @Test func aWaitEndsAfterThePatienceWhateverHappens() async {
    let keys = RenderKeysInFlight(patience: .milliseconds(150))
    keys.rendered("k", token: "stuck")
    let started = ContinuousClock.now
    #expect(await keys.settled("k") == true)
    let waited = started.duration(to: .now)
    #expect(waited >= .milliseconds(150) && waited < .seconds(10))
    #expect(keys.contains("k"), "the other job's key stays until its own outcome")
  }
}
