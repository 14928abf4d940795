import Foundation
import ThumbCore

/// Where the HTTP endpoint listens (`--http-address HOST:PORT`; port 0 picks a free one).
public struct HTTPAddress: Sendable, Equatable, CustomStringConvertible {
  public var host: String
  public var port: Int

  public init(host: String, port: Int) {
    self.host = host
    self.port = port
  }

  /// `HOST:PORT`, `[v6]:PORT` or `:PORT` (all interfaces).
  public init?(_ text: String) {
    guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
      (0...65535).contains(port)
    else { return nil }
    var host = String(text[..<colon])
    if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
    self.init(host: host.isEmpty ? "0.0.0.0" : host, port: port)
  }

  public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// Reading and masking the password of a libpq URI (`postgresql://user:pw@host/db`) or conninfo string
/// (`host=... password=pw`).
public enum DatabaseURL {
  public static func password(in url: String) -> String? {
    if let components = URLComponents(string: url), components.scheme?.hasPrefix("postgres") == true {
      return components.password.flatMap { $0.isEmpty ? nil : ($0.removingPercentEncoding ?? $0) }
    }
    for pair in url.split(separator: " ") where pair.hasPrefix("password=") {
      let value = pair.dropFirst("password=".count).trimmingCharacters(in: CharacterSet(charactersIn: "'"))
      return value.isEmpty ? nil : value
    }
    return nil
  }

  /// The URL with its password replaced by `****`.
  public static func masked(_ url: String) -> String {
    if var components = URLComponents(string: url), components.scheme?.hasPrefix("postgres") == true {
      if components.password != nil { components.password = "****" }
      return components.string ?? url
    }
    return url.split(separator: " ", omittingEmptySubsequences: false).map {
      $0.hasPrefix("password=") ? "password=****" : String($0)
    }.joined(separator: " ")
  }
}

/// Replaces each secret in `text` by `****`, and masks the secrets of any URL in it (a source URL's
/// password or presigned signature, `SourceURL.redactingSecrets`).
public func redacting(_ text: String, secrets: [String]) -> String {
  var text = SourceURL.redactingSecrets(in: text)
  // Very short secrets would mask ordinary letters everywhere and hide nothing worth hiding.
  for secret in secrets where secret.count >= 3 && text.contains(secret) {
    text = text.replacingOccurrences(of: secret, with: "****")
  }
  return text
}
