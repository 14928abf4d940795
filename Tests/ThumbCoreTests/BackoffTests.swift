import Testing

@testable import ThumbCore

/// The one backoff: growth, cap and the two jitters, in seconds and as durations.
@Suite struct BackoffTests {
  @Test func doublesUpToTheCap() {
    let backoff = Backoff(first: .milliseconds(500), cap: .seconds(10))
    #expect(backoff.delay(afterFailures: 1) == .milliseconds(500))
    #expect(backoff.delay(afterFailures: 2) == .seconds(1))
    #expect(backoff.delay(afterFailures: 5) == .seconds(8))
    #expect(backoff.delay(afterFailures: 6) == .seconds(10))
    #expect(backoff.delay(afterFailures: 1000) == .seconds(10))
    // Zero or negative failures count as the first.
    #expect(backoff.delay(afterFailures: 0) == .milliseconds(500))
  }

  @Test func growsLinearlyWhenAskedTo() {
    let backoff = Backoff(first: .milliseconds(250), cap: .seconds(5), growth: .linear)
    #expect(
      (1...4).map { backoff.delay(afterFailures: $0) } == [
        .milliseconds(250), .milliseconds(500), .milliseconds(750), .seconds(1),
      ])
    #expect(backoff.delay(afterFailures: 20) == .seconds(5))
    #expect(backoff.delay(afterFailures: 33) == .seconds(5))
  }

  @Test func withoutACapItKeepsDoubling() {
    let backoff = Backoff(first: .milliseconds(250), cap: nil)
    #expect(backoff.seconds(afterFailures: 5) == 4)
    #expect(backoff.seconds(afterFailures: 21) == 262_144)
  }

  @Test func shorterByJitterNeverPassesTheCap() {
    let backoff = Backoff(first: .seconds(10), cap: .seconds(300), jitter: .shorterBy(0.25))
    #expect(backoff.seconds(afterFailures: 3, unit: 0) == 40)
    #expect(backoff.seconds(afterFailures: 3, unit: 0.5) == 35)
    #expect(backoff.seconds(afterFailures: 10, unit: 0) == 300)
    #expect(backoff.seconds(afterFailures: 10, unit: 0.999) > 225)
    // A unit outside [0, 1] is clamped.
    #expect(backoff.seconds(afterFailures: 1, unit: 7) == 7.5)
  }

  @Test func eitherJitterSpreadsBothWays() {
    let backoff = Backoff(first: .milliseconds(500), cap: nil, jitter: .either(0.25))
    #expect(backoff.seconds(afterFailures: 2, unit: 0) == 0.75)
    #expect(backoff.seconds(afterFailures: 2, unit: 0.5) == 1)
    #expect(backoff.seconds(afterFailures: 2, unit: 1) == 1.25)
  }

  /// The policies and the loops that used to write out their own growth wait by it, unchanged.
  @Test func everyWaiterKeepsItsNumbers() {
    #expect(RetryPolicy().delay(afterAttempt: 5, unit: 0) == 160)
    #expect(RetryPolicy().delay(afterAttempt: 30, unit: 0) == 3600)
    #expect(FetchRetryPolicy().backoff.seconds(afterFailures: 2, unit: 0.5) == 1)
    var pacing = ProducerPacing(
      .init(concurrency: 1, leaseBatch: 1, drain: false, pollInterval: .seconds(1), shutdownGrace: .zero))
    #expect(pacing.leaseFailed(now: .now) == .wait(.milliseconds(250)))
  }
}
