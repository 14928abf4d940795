/// `application/x-www-form-urlencoded`, as a browser sends a form and a URL carries its query: the
/// pairs in order, `+` as a space, percent escapes decoded (an invalid one kept as written).
public struct Form: Sendable, Equatable {
  public private(set) var pairs: [(name: String, value: String)]

  public init(pairs: [(name: String, value: String)]) { self.pairs = pairs }

  public init(encoded: some StringProtocol) {
    pairs = encoded.split(separator: "&", omittingEmptySubsequences: true).map { pair in
      let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
      return (Self.decode(parts[0]), parts.count > 1 ? Self.decode(parts[1]) : "")
    }
  }

  /// The first value of `name`; nil when absent, and when empty (an empty field is no filter).
  public subscript(_ name: String) -> String? {
    guard let value = pairs.first(where: { $0.name == name })?.value, !value.isEmpty else { return nil }
    return value
  }

  public static func == (lhs: Form, rhs: Form) -> Bool {
    lhs.pairs.map(\.name) == rhs.pairs.map(\.name) && lhs.pairs.map(\.value) == rhs.pairs.map(\.value)
  }

  static func decode(_ text: some StringProtocol) -> String {
    var bytes: [UInt8] = []
    let utf8 = Array(text.utf8)
    var index = 0
    while index < utf8.count {
      let byte = utf8[index]
      if byte == UInt8(ascii: "+") {
        bytes.append(UInt8(ascii: " "))
      } else if byte == UInt8(ascii: "%"), index + 2 < utf8.count,
        let high = hexValue(utf8[index + 1]), let low = hexValue(utf8[index + 2])
      {
        bytes.append(high << 4 | low)
        index += 2
      } else {
        bytes.append(byte)
      }
      index += 1
    }
    return String(decoding: bytes, as: UTF8.self)
  }

  /// Percent-encodes everything but RFC 3986's unreserved characters: for query values in links.
  public static func encode(_ value: String) -> String {
    var out = ""
    for byte in value.utf8 {
      switch byte {
      case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
        UInt8(ascii: "~"):
        out.unicodeScalars.append(Unicode.Scalar(byte))
      default:
        let hex = Array("0123456789ABCDEF".utf8)
        out += "%" + String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 15)]], as: UTF8.self)
      }
    }
    return out
  }

  /// A query string of the non-empty values, in order.
  public static func query(_ pairs: [(String, String?)]) -> String {
    pairs.compactMap { name, value in
      guard let value, !value.isEmpty else { return nil }
      return "\(name)=\(encode(value))"
    }.joined(separator: "&")
  }

  private static func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
    default: return nil
    }
  }
}
