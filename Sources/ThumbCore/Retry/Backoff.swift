/// How long to wait after the n-th failure in a row: the one backoff of thumbd. Jobs between attempts
/// (`RetryPolicy`), downloads and storage requests between tries (`FetchRetryPolicy`), the storage's
/// refusals, the keeper's and the storage check's start-up, outcome writes, the LISTEN connection and
/// failed lease statements all wait by it, each with its own numbers.
///
/// delay(n) = min(cap, first × 2^(n-1)) (or first × n when growing linearly), then spread by the jitter.
public struct Backoff: Sendable, Equatable {
  public enum Growth: Sendable, Equatable {
    /// first, 2 × first, 4 × first, ...
    case doubling
    /// first, 2 × first, 3 × first, ...
    case linear
  }

  public enum Jitter: Sendable, Equatable {
    case none
    /// Up to this fraction shorter, (1 - j·u): what failed together does not come back together, and
    /// the cap is never passed.
    case shorterBy(Double)
    /// Up to this fraction either way, (1 + j·(2u - 1)).
    case either(Double)
  }

  public var first: Duration
  /// The longest wait before jitter; nil: none.
  public var cap: Duration?
  public var growth: Growth
  public var jitter: Jitter

  public init(
    first: Duration = .milliseconds(500), cap: Duration? = .seconds(10), growth: Growth = .doubling,
    jitter: Jitter = .none
  ) {
    self.first = first
    self.cap = cap
    self.growth = growth
    self.jitter = jitter
  }

  /// The wait after `failures` failures in a row (1 for the first), in seconds. `unit` is a random
  /// number in [0, 1) for the jitter.
  public func seconds(afterFailures failures: Int, unit: Double = 0) -> Double {
    let n = max(1, failures)
    var raw: Double
    switch growth {
    case .doubling:
      raw = first.inSeconds
      for _ in 1..<min(n, 61) {
        raw *= 2
        if let cap, raw >= cap.inSeconds { break }
      }
    case .linear:
      raw = first.inSeconds * Double(n)
    }
    if let cap { raw = min(raw, cap.inSeconds) }
    let u = min(max(unit, 0), 1)
    switch jitter {
    case .none: return raw
    case .shorterBy(let fraction): return raw * (1 - fraction * u)
    case .either(let fraction): return raw * (1 + fraction * (2 * u - 1))
    }
  }

  /// The same wait as a Duration.
  public func delay(afterFailures failures: Int, unit: Double = 0) -> Duration {
    .seconds(seconds(afterFailures: failures, unit: unit))
  }
}
