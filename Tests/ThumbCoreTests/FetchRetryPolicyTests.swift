import Testing

@testable import ThumbCore

struct FetchRetryPolicyTests {
  let policy = FetchRetryPolicy(tries: 3, baseSeconds: 0.5, jitter: 0.25, retryAfterCap: 10)

  @Test func backsOffExponentiallyWithJitterThenStops() {
    #expect(
      policy.decide(afterTry: 1, retryAfter: nil, secondsLeft: 30, unit: 0.5) == .retry(afterSeconds: 0.5))
    #expect(
      policy.decide(afterTry: 2, retryAfter: nil, secondsLeft: 30, unit: 0.5) == .retry(afterSeconds: 1.0))
    #expect(
      policy.decide(afterTry: 1, retryAfter: nil, secondsLeft: 30, unit: 0) == .retry(afterSeconds: 0.375))
    #expect(
      policy.decide(afterTry: 1, retryAfter: nil, secondsLeft: 30, unit: 1) == .retry(afterSeconds: 0.625))
    #expect(policy.decide(afterTry: 3, retryAfter: nil, secondsLeft: 30, unit: 0.5) == .stop(notBefore: nil))
  }

  @Test func honoursRetryAfterUpToTheCap() {
    #expect(policy.decide(afterTry: 1, retryAfter: 4, secondsLeft: 30, unit: 0.5) == .retry(afterSeconds: 4))
    // Longer than the cap: the attempt ends and the queue must not retry sooner than asked.
    #expect(policy.decide(afterTry: 1, retryAfter: 120, secondsLeft: 300, unit: 0.5) == .stop(notBefore: 120))
    // Out of tries, the origin's wish still travels with the error.
    #expect(policy.decide(afterTry: 3, retryAfter: 5, secondsLeft: 30, unit: 0.5) == .stop(notBefore: 5))
  }

  @Test func neverWaitsPastTheDeadline() {
    #expect(policy.decide(afterTry: 1, retryAfter: 4, secondsLeft: 3, unit: 0.5) == .stop(notBefore: 4))
    #expect(policy.decide(afterTry: 2, retryAfter: nil, secondsLeft: 0.9, unit: 0.5) == .stop(notBefore: nil))
  }

  @Test func retryAfterIsSecondsOrAnHTTPDate() {
    #expect(RetryAfter.seconds("120", now: 0) == 120)
    #expect(RetryAfter.seconds(" 7 ", now: 0) == 7)
    // 784111777 is Sun, 06 Nov 1994 08:49:37 GMT, RFC 9110's example.
    #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777)
    #expect(RetryAfter.seconds("Sun, 06 Nov 1994 08:49:37 GMT", now: 784_111_700) == 77)
    #expect(RetryAfter.seconds("Sun, 06 Nov 1994 08:49:37 GMT", now: 784_111_800) == 0, "a past date: now")
    #expect(RetryAfter.seconds("soon", now: 0) == nil)
    #expect(RetryAfter.seconds("-5", now: 0) == nil)
    #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == nil, "obsolete formats are not generated")
    #expect(HTTPDate.parse("Thu, 29 Feb 2024 23:59:60 GMT") == 1_709_251_200)
  }
}
