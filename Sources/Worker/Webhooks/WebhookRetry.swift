public import ThumbCore

/// What one POST of a delivery came to, and what happens next: a pure decision, no I/O and no clock of
/// its own (the caller passes the instants and the random number).
public struct WebhookRetry: Sendable, Equatable {
  /// How a receiver answered, or that it did not.
  public enum Answer: Sendable, Equatable {
    case status(Int)
    /// No answer: refused, reset, timed out, a blocked address.
    case none(String)
  }

  public enum Verdict: Sendable, Equatable {
    case delivered
    /// Again in this many seconds.
    case retry(after: Double)
    /// Retried for `retryFor` without a 2xx: given up.
    case givenUp
    /// 410 Gone: the endpoint asks for no more deliveries.
    case stopped
  }

  /// Between attempts: 5 s, 10 s, 20 s, ... up to an hour, each up to half shorter at random so that
  /// deliveries that failed together do not come back together.
  public var backoff = Backoff(
    first: .seconds(5), cap: .seconds(3600), growth: .doubling, jitter: .shorterBy(0.5))
  /// A delivery is retried for at least this long after its first attempt.
  public var retryFor: Double = 24 * 3600

  public init() {}

  /// `attempts`: this one included; `firstAttempt` and `now`: seconds on one clock; `unit`: a random
  /// number in [0, 1).
  public func verdict(
    _ answer: Answer, attempts: Int, firstAttempt: Double, now: Double, unit: Double
  )
    -> Verdict
  {
    switch answer {
    case .status(let code) where (200..<300).contains(code): return .delivered
    case .status(410): return .stopped
    default:
      if now - firstAttempt >= retryFor { return .givenUp }
      return .retry(after: backoff.seconds(afterFailures: attempts, unit: unit))
    }
  }
}
