/// Durations as operators write them in flags and environment variables: `90`, `90s`, `30m`, `12h`,
/// `7d`, `2w` (a bare number is seconds).
public enum TimeSpan {
  public static func parseSeconds(_ text: String) -> Double? {
    let trimmed = String(text.filter { !$0.isWhitespace }).lowercased()
    guard let last = trimmed.last else { return nil }
    let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604_800]
    let (number, unit) = last.isLetter ? (trimmed.dropLast(), units[last]) : (trimmed[...], 1)
    guard let unit, let value = Double(number), value >= 0, value.isFinite else { return nil }
    return value * unit
  }
}

extension Duration {
  /// The duration in seconds, as the APIs that take a `Double` want it.
  public var inSeconds: Double {
    Double(components.seconds) + Double(components.attoseconds) / 1e18
  }
}
