/// How long each login attempt waits before its password is checked: attempts are spaced out after
/// failures. Guesses in parallel queue behind each other, so a guesser gets a few a second at most,
/// while the operator who mistyped waits a moment and is let in by the right password. The queue is
/// never longer than one longest spacing: an attempt that would wait more is answered at once (busy,
/// 429) without taking a place, so a flood of guesses cannot push the operator's attempt minutes away.
///
/// A pure value (decisions as values): `admit` says when an attempt may be checked, `failed` and
/// `succeeded` record its outcome; the caller sleeps and keeps the clock.
public struct LoginThrottle: Sendable, Equatable {
  public struct Settings: Sendable, Equatable {
    /// The spacing after one failure; it doubles with each further one, up to `longest`.
    public var first: Duration = .milliseconds(250)
    public var longest: Duration = .seconds(4)
    /// A quiet spell this long forgives every failure before it.
    public var forgiveAfter: Duration = .seconds(60)

    public init() {}
  }

  public let settings: Settings
  /// Failures since the last success or forgiveness.
  public private(set) var failures = 0
  /// The earliest instant the next attempt may be checked at (the previous one's plus the spacing).
  private var nextCheck: ContinuousClock.Instant?
  private var lastFailure: ContinuousClock.Instant?

  public init(settings: Settings = Settings()) { self.settings = settings }

  /// The spacing the present failures ask for.
  public var spacing: Duration {
    guard failures > 0 else { return .zero }
    var spacing = settings.first
    for _ in 1..<min(failures, 16) where spacing < settings.longest { spacing *= 2 }
    return min(spacing, settings.longest)
  }

  /// The instant an attempt arriving `now` may be checked (the slot is the attempt's, the next one
  /// comes a spacing later), or nil when it would wait more than the longest spacing: busy, try again.
  public mutating func admit(now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
    if let lastFailure, now - lastFailure >= settings.forgiveAfter, failures > 0 {
      failures = 0
      nextCheck = nil
    }
    let slot = max(now, nextCheck ?? now)
    guard slot - now <= settings.longest else { return nil }
    nextCheck = slot + spacing
    return slot
  }

  public mutating func failed(now: ContinuousClock.Instant) {
    failures += 1
    lastFailure = now
    // The attempts already admitted keep their slots; the next one waits the new spacing.
    nextCheck = max(nextCheck ?? now, now + spacing)
  }

  public mutating func succeeded() {
    failures = 0
    nextCheck = nil
    lastFailure = nil
  }
}
