/// When a download that failed transiently is tried again inside one attempt, before the queue's own
/// backoff (RetryPolicy) takes over.
///
/// delay(try n) = base * 2^(n-1) * (1 ± jitter), or the origin's Retry-After when it sent one. A Retry-After
/// longer than `retryAfterCap` is not waited out inside the attempt: the attempt ends, and the job goes back
/// to the queue not before that time (JobError.retryAfterSeconds).
public struct FetchRetryPolicy: Sendable, Equatable {
  /// Tries per attempt, the first included.
  public var tries: Int
  /// Between tries: doubling from the base, no cap (the attempt's deadline bounds it), ± the jitter.
  public var backoff: Backoff
  /// The longest Retry-After waited for inside an attempt.
  public var retryAfterCap: Double

  public init(tries: Int = 3, baseSeconds: Double = 0.5, jitter: Double = 0.25, retryAfterCap: Double = 10) {
    self.tries = tries
    self.backoff = Backoff(first: .seconds(baseSeconds), cap: nil, jitter: .either(jitter))
    self.retryAfterCap = retryAfterCap
  }

  public enum Decision: Equatable, Sendable {
    /// Try again after this many seconds.
    case retry(afterSeconds: Double)
    /// Stop trying in this attempt. `notBefore`: the origin asked not to be asked again sooner.
    case stop(notBefore: Double?)
  }

  /// What to do after try `tryNumber` (1-based) failed with a retryable error. `secondsLeft` is what remains
  /// of the attempt's fetch deadline; `unit` a random number in [0, 1).
  public func decide(
    afterTry tryNumber: Int, retryAfter: Double?, secondsLeft: Double, unit: Double
  ) -> Decision {
    if let retryAfter, retryAfter > retryAfterCap { return .stop(notBefore: retryAfter) }
    guard tryNumber < tries else { return .stop(notBefore: retryAfter) }
    let wait = retryAfter ?? backoff.seconds(afterFailures: tryNumber, unit: unit)
    // Waiting past the deadline would only end in a timeout: stop now and let the queue retry later.
    guard wait < secondsLeft else { return .stop(notBefore: retryAfter) }
    return .retry(afterSeconds: wait)
  }
}

/// The value of a Retry-After header: delay-seconds ("120") or an HTTP date
/// ("Wed, 21 Oct 2015 07:28:00 GMT", RFC 9110 §10.2.3), as seconds from `now` (never negative).
public enum RetryAfter {
  public static func seconds(_ value: String, now: Double) -> Double? {
    let text = value.trimmingWhitespace()
    if !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
      return Double(text.prefix(9))  // nine digits are 31 years; callers cap far below
    }
    guard let date = HTTPDate.parse(text) else { return nil }
    return max(0, date - now)
  }
}

/// IMF-fixdate, the only HTTP date format senders may generate (RFC 9110 §5.6.7), as Unix seconds.
public enum HTTPDate {
  static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

  public static func parse(_ text: String) -> Double? {
    // "Sun, 06 Nov 1994 08:49:37 GMT"
    let parts = text.split(separator: " ")
    guard parts.count == 6, parts[0].hasSuffix(","), parts[5] == "GMT",
      let day = Int(parts[1]), let monthIndex = months.firstIndex(of: String(parts[2])),
      let year = Int(parts[3])
    else { return nil }
    let time = parts[4].split(separator: ":")
    guard time.count == 3, let hour = Int(time[0]), let minute = Int(time[1]), let second = Int(time[2]),
      (1...31).contains(day), (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second)
    else { return nil }
    let days = daysFromCivil(year: year, month: monthIndex + 1, day: day)
    return Double(days * 86400 + hour * 3600 + minute * 60 + second)
  }

  /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
  static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
    let y = month <= 2 ? year - 1 : year
    let era = (y >= 0 ? y : y - 399) / 400
    let yearOfEra = y - era * 400
    let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
    let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
    return era * 146097 + dayOfEra - 719468
  }
}
