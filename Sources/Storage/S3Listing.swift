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
    truncated = S3XML.elements("IsTruncated", in: Substring(xml)).first == "true"
    // Made once for the page: a formatter is costly to make, and a page holds up to 1,000 objects.
    let withFraction = ISO8601DateFormatter()
    withFraction.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    let plain = ISO8601DateFormatter()
    for contents in S3XML.elements("Contents", in: Substring(xml)) {
      guard let name = S3XML.elements("Key", in: contents).first else { continue }
      let modified = S3XML.elements("LastModified", in: contents).first.flatMap { text in
        (withFraction.date(from: String(text)) ?? plain.date(from: String(text)))?.timeIntervalSince1970
      }
      objects.append(Object(name: S3XML.unescaped(String(name)), modified: modified ?? 0))
    }
  }
}

/// What S3's answers need of XML: their documents are flat and fixed (an error's `<Code>`, a listing's
/// `<Contents>`), so the text between a tag and its end is read directly.
enum S3XML {
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
}
