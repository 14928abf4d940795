import Foundation
import Testing

@testable import Worker

/// A duplicate that finds its render key being written waits for that outcome, and no longer than its
/// patience.
@Suite struct RenderKeysInFlightTests {
  @Test func aKeyNobodyHoldsIsSettledAtOnce() async {
    let keys = RenderKeysInFlight()
    keys.rendered("a", token: "t1")
    let started = ContinuousClock.now
    #expect(await keys.settled("b") == false)
    #expect(started.duration(to: .now) < .milliseconds(50))
  }

  @Test func aDuplicateWaitsUntilTheOutcomeIsWritten() async {
    let keys = RenderKeysInFlight()
    keys.rendered("k", token: "first")
    let waiter = Task { await keys.settled("k") }
    try? await Task.sleep(for: .milliseconds(100))
    #expect(keys.contains("k"))
    let ended = ContinuousClock.now
    keys.ended(token: "first")
    #expect(await waiter.value == true)
    #expect(ended.duration(to: .now) < .milliseconds(200))
    #expect(!keys.contains("k"))
  }

  @Test func aWaitEndsAfterThePatienceWhateverHappens() async {
    let keys = RenderKeysInFlight(patience: .milliseconds(150))
    keys.rendered("k", token: "stuck")
    let started = ContinuousClock.now
    #expect(await keys.settled("k") == true)
    let waited = started.duration(to: .now)
    #expect(waited >= .milliseconds(150) && waited < .seconds(1))
    #expect(keys.contains("k"), "the other job's key stays until its own outcome")
  }
}
