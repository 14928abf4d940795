import Foundation

/// The parts of a ListObjectsV2 answer that listing needs: each object's name and time, and whether
/// more pages follow. S3's listing is a flat, fixed document; its names are XML-escaped.
struct S3Listing {
  struct Object {
    var name: String
    var modified: Double
  }

  var objects: [Object] = []
  var truncated = false

  init(xml: String) {
    truncated = Self.elements("IsTruncated", in: Substring(xml)).first == "true"
    for contents in Self.elements("Contents", in: Substring(xml)) {
      guard let name = Self.elements("Key", in: contents).first else { continue }
      let modified = Self.elements("LastModified", in: contents).first.flatMap(Self.date) ?? 0
      objects.append(Object(name: Self.unescaped(String(name)), modified: modified))
    }
  }

  /// The contents of every `<tag>...</tag>` in `text`, in order (no nesting of the same tag).
  static func elements(_ tag: String, in text: Substring) -> [Substring] {
    var found: [Substring] = []
    var rest = text[...]
    while let open = rest.range(of: "<\(tag)>"),
      let close = rest.range(of: "</\(tag)>", range: open.upperBound..<rest.endIndex)
    {
      found.append(rest[open.upperBound..<close.lowerBound])
      rest = rest[close.upperBound...]
    }
    return found
  }

  static func unescaped(_ text: String) -> String {
    guard text.contains("&") else { return text }
    return text.replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
      .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&apos;", with: "'")
      .replacingOccurrences(of: "&#x0D;", with: "\r").replacingOccurrences(of: "&amp;", with: "&")
  }

  static func date(_ text: Substring) -> Double? {
    let withFraction = ISO8601DateFormatter()
    withFraction.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    if let date = withFraction.date(from: String(text)) { return date.timeIntervalSince1970 }
    return ISO8601DateFormatter().date(from: String(text))?.timeIntervalSince1970
  }
}
