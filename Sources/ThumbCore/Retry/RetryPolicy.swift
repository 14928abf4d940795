/// When a job whose attempt failed with a transient error runs again.
///
/// delay(attempt) = min(cap, base * 2^(attempt-1)) * (1 - jitter * u), u uniform in [0, 1)
///
/// With the defaults (base 10 s, cap 1 h, jitter 0.25) attempts 1..5 wait about 10 s, 20 s, 40 s, 80 s,
/// 160 s, each up to a quarter shorter so that jobs failed together by one outage do not return together.
public struct RetryPolicy: Sendable, Equatable {
  public var backoff: Backoff

  public init(baseSeconds: Double = 10, capSeconds: Double = 3600, jitter: Double = 0.25) {
    backoff = Backoff(first: .seconds(baseSeconds), cap: .seconds(capSeconds), jitter: .shorterBy(jitter))
  }

  /// The delay after the given failed attempt (1-based). `unit` is a random number in [0, 1).
  public func delay(afterAttempt attempt: Int, unit: Double) -> Double {
    backoff.seconds(afterFailures: attempt, unit: unit)
  }

  /// What the queue should do with a job whose attempt failed.
  public enum Decision: Equatable, Sendable {
    case fail
    case retry(afterSeconds: Double)
  }

  public func decide(code: ErrorCode, attempt: Int, maxAttempts: Int, unit: Double) -> Decision {
    if code.isPermanent || attempt >= maxAttempts { return .fail }
    return .retry(afterSeconds: delay(afterAttempt: attempt, unit: unit))
  }
}
