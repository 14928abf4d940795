/// A piece of HTML. Text interpolated into it is escaped unless it is HTML itself, so a value read from
/// the database (a source URL, metadata, an error text, a profile name: the users' data) can only ever
/// show as text: there is no way to interpolate a `String` unescaped.
public struct HTML: Sendable, Equatable, ExpressibleByStringInterpolation, CustomStringConvertible {
  public private(set) var text: String

  /// Markup written here, in the console's own source.
  public init(stringLiteral value: String) { text = value }
  public init(stringInterpolation: Interpolation) { text = stringInterpolation.text }
  init(trusted text: String) { self.text = text }

  public var description: String { text }

  public static func + (lhs: HTML, rhs: HTML) -> HTML { HTML(trusted: lhs.text + rhs.text) }

  /// The pieces one after another.
  public static func join(_ parts: some Sequence<HTML>, separator: HTML = "") -> HTML {
    HTML(trusted: parts.map(\.text).joined(separator: separator.text))
  }

  public struct Interpolation: StringInterpolationProtocol {
    var text = ""

    public init(literalCapacity: Int, interpolationCount: Int) {
      text.reserveCapacity(literalCapacity + interpolationCount * 16)
    }

    public mutating func appendLiteral(_ literal: String) { text += literal }
    public mutating func appendInterpolation(_ html: HTML) { text += html.text }
    public mutating func appendInterpolation(_ value: String) { text += HTML.escape(value) }
    public mutating func appendInterpolation(_ value: String?) { text += HTML.escape(value ?? "") }
    public mutating func appendInterpolation<T: BinaryInteger>(_ value: T) { text += String(value) }
    public mutating func appendInterpolation(_ parts: [HTML]) { text += parts.map(\.text).joined() }
  }

  /// `&`, `<`, `>`, `"` and `'` as character references: safe in text and in quoted attribute values.
  public static func escape(_ value: String) -> String {
    var out = ""
    out.reserveCapacity(value.utf8.count)
    for scalar in value.unicodeScalars {
      switch scalar {
      case "&": out += "&amp;"
      case "<": out += "&lt;"
      case ">": out += "&gt;"
      case "\"": out += "&quot;"
      case "'": out += "&#39;"
      default: out.unicodeScalars.append(scalar)
      }
    }
    return out
  }
}
