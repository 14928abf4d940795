/// Sizes as operators write them: `256MiB`, `50MB`, `1g`, `4096`. Binary (KiB, MiB, GiB) and decimal
/// (kB, MB, GB) units are honoured as written; a bare k/m/g is binary, as in most Unix tools.
public enum ByteSize {
  public static func parse(_ text: String) -> Int? {
    let trimmed = text.trimmingWhitespace()
    guard let split = trimmed.firstIndex(where: { !($0.isNumber || $0 == ".") }) else {
      return Double(trimmed).flatMap(whole)
    }
    guard let number = Double(trimmed[..<split]) else { return nil }
    let unit = trimmed[split...].trimmingWhitespace().lowercased()
    let multiplier: Double
    switch unit {
    case "b": multiplier = 1
    case "k", "kib", "ki": multiplier = 1024
    case "m", "mib", "mi": multiplier = 1024 * 1024
    case "g", "gib", "gi": multiplier = 1024 * 1024 * 1024
    case "kb": multiplier = 1000
    case "mb": multiplier = 1_000_000
    case "gb": multiplier = 1_000_000_000
    default: return nil
    }
    return whole(number * multiplier)
  }

  /// A short human form, binary units: 268435456 -> "256 MiB".
  public static func format(_ bytes: Int) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"]
    var value = Double(bytes)
    var unit = 0
    while abs(value) >= 1024 && unit < units.count - 1 {
      value /= 1024
      unit += 1
    }
    if unit == 0 { return "\(bytes) B" }
    let rounded = (value * 10).rounded() / 10
    return rounded == rounded.rounded() ? "\(Int(rounded)) \(units[unit])" : "\(rounded) \(units[unit])"
  }

  private static func whole(_ value: Double) -> Int? {
    value >= 0 && value < 9e18 ? Int(value.rounded()) : nil
  }
}

extension StringProtocol {
  func trimmingWhitespace() -> String {
    var s = Substring(self)
    while let first = s.first, first.isWhitespace { s.removeFirst() }
    while let last = s.last, last.isWhitespace { s.removeLast() }
    return String(s)
  }
}
