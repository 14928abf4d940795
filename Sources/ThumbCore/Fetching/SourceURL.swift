import Foundation

/// What a source URL names, and what in it is secret.
///
/// A presigned URL carries its authentication in query parameters that change on every signing, so two
/// URLs of one object differ only there: `identity` drops them, and unique enqueue (the database's
/// `thumbs.source_identity`, which must agree with it) and shared downloads compare identities. Every
/// other part of the URL still counts. The signature, the credential, the session token and a userinfo
/// password are secrets: `redacted` masks them wherever a URL is shown (log lines, `last_error`, the
/// originals row).
public enum SourceURL {
  /// The query parameters of a presigned URL (SigV4, and the older SigV2 scheme) that authenticate the
  /// request instead of naming the object.
  public static let signatureParameters: Set<Substring> = [
    "X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires", "X-Amz-SignedHeaders",
    "X-Amz-Signature", "X-Amz-Security-Token", "AWSAccessKeyId", "Signature", "Expires",
  ]

  public static let mask = "****"

  /// The URL without its signature parameters; the URL itself when it has none.
  public static func identity(_ url: String) -> String {
    let parts = Parts(url)
    guard let query = parts.query else { return url }
    let kept = query.split(separator: "&", omittingEmptySubsequences: false).filter {
      !signatureParameters.contains(name(of: $0))
    }
    let joined = kept.joined(separator: "&")
    return String(parts.base) + (joined.isEmpty ? "" : "?" + joined) + String(parts.fragment)
  }

  /// The URL with its secrets masked: a userinfo password and the secret query parameters' values.
  public static func redacted(_ url: String) -> String { redactingSecrets(in: url) }

  /// Whether the URL's path (or S3 key) ends in an extension of a format read by ranges
  /// (`FormatTraits.rangeExtensions`: MP4-family videos): those are asked for by ranges, their index and
  /// first keyframes, not whole.
  public static func readsByRanges(_ url: String) -> Bool {
    let path = url.split(separator: "?", maxSplits: 1).first.map(String.init) ?? url
    guard let dot = path.lastIndex(of: "."), !path[dot...].contains("/") else { return false }
    let ext = path[path.index(after: dot)...].lowercased()
    return MediaFormats.table.contains { $0.readsByRanges && $0.rangeExtensions.contains(ext) }
  }

  /// The URL as error messages show it: redacted and at most 200 characters.
  public static func shown(_ url: String) -> String { String(redacted(url).prefix(200)) }

  /// `text` with every URL secret in it masked: the password of any `scheme://user:password@` and the
  /// value of any secret parameter after a `?` or `&` (the credential, signature and session token of
  /// the signature parameters above). For free text (a library's error message, a log
  /// line) as well as for one URL.
  public static func redactingSecrets(in text: String) -> String {
    guard text.contains("@") || text.contains("=") else { return text }
    var result = text.replacing(
      #/(?<head>[A-Za-z][A-Za-z0-9+.\-]*://[^/?#@\s:"']*):[^/?#@\s"']*@/#
    ) { match in "\(match.output.head):\(mask)@" }
    result = result.replacing(
      #/(?<head>[?&](?:X-Amz-Credential|X-Amz-Signature|X-Amz-Security-Token|AWSAccessKeyId|Signature)=)[^&#\s"']*/#
    ) { match in "\(match.output.head)\(mask)" }
    return result
  }

  /// When a presigned URL stops being accepted, as seconds since 1970: `X-Amz-Date` plus
  /// `X-Amz-Expires` (SigV4), or `Expires` (SigV2). nil for a URL that is not presigned.
  public static func expiry(_ url: String) -> Double? {
    guard let query = Parts(url).query else { return nil }
    var values: [Substring: Substring] = [:]
    for parameter in query.split(separator: "&") {
      let pair = parameter.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
      if pair.count == 2 { values[pair[0]] = pair[1] }
    }
    if let date = values["X-Amz-Date"].flatMap(amzDate),
      let expires = values["X-Amz-Expires"].flatMap({ Double($0) })
    {
      return date + expires
    }
    return values["Expires"].flatMap { Double($0) }
  }

  /// Why a source URL can never be fetched, as `thumbs.enqueue` refuses it (the database's
  /// `thumbs.source_problem`, which must agree: SourceURLTests and BackendChecksTests hold the two to one
  /// table). nil for a URL worth trying; what only a fetch can tell (addresses, redirects) comes later.
  public static func problem(_ url: String) -> Problem? {
    if url.isEmpty { return .empty }
    guard let separator = url.range(of: "://"), isScheme(url[..<separator.lowerBound]) else {
      return .notAbsolute
    }
    let scheme = url[..<separator.lowerBound].lowercased()
    guard ["http", "https", "s3"].contains(scheme) else { return .unreadScheme(scheme) }
    let rest = url[separator.upperBound...]
    if scheme == "s3" {
      guard let slash = rest.firstIndex(of: "/"), slash != rest.startIndex,
        rest.index(after: slash) != rest.endIndex
      else { return .noObject }
      return nil
    }
    // An S3 key is read byte for byte, spaces included; a URL is not.
    if url.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }) { return .spaceOrControl }
    let authority = rest.prefix { !"/?#".contains($0) }
    let hostAndPort =
      authority.lastIndex(of: "@").map { authority[authority.index(after: $0)...] } ?? authority
    let host: Substring
    let afterHost: Substring
    if hostAndPort.hasPrefix("[") {
      guard let close = hostAndPort.firstIndex(of: "]") else { return .badAuthority }
      host = hostAndPort[...close]
      afterHost = hostAndPort[hostAndPort.index(after: close)...]
    } else {
      host = hostAndPort.prefix { $0 != ":" }
      afterHost = hostAndPort[host.endIndex...]
      if host.contains(where: { "[]@".contains($0) }) { return .badAuthority }
    }
    var port: Substring?
    if !afterHost.isEmpty {
      guard afterHost.first == ":", afterHost.dropFirst().allSatisfy({ ("0"..."9").contains($0) }) else {
        return .badAuthority
      }
      port = afterHost.dropFirst()
    }
    if host.isEmpty || host == "[]" { return .noHost }
    if let port, !port.isEmpty, port.count > 5 || !(1...65535).contains(Int(port) ?? 0) { return .badPort }
    return nil
  }

  /// Why a source URL can never be fetched; `description` is the database's wording.
  public enum Problem: Equatable, Sendable, CustomStringConvertible {
    case empty
    case spaceOrControl
    case notAbsolute
    case unreadScheme(String)
    case noObject
    case badAuthority
    case noHost
    case badPort

    public var description: String {
      switch self {
      case .empty: "is empty"
      case .spaceOrControl: "contains a space or a control character"
      case .notAbsolute: "is not an absolute URL (scheme://host/path)"
      case .unreadScheme(let scheme): "has the scheme \(scheme), which thumbd does not read (http, https, s3)"
      case .noObject: "does not name an object (s3://BUCKET/KEY)"
      case .badAuthority: "has an invalid host or port"
      case .noHost: "has no host"
      case .badPort: "has an invalid port"
      }
    }
  }

  private static func isScheme(_ text: Substring) -> Bool {
    guard let first = text.unicodeScalars.first, first.isASCIILetter else { return false }
    return text.unicodeScalars.allSatisfy {
      $0.isASCIILetter || ("0"..."9").contains($0) || "+.-".unicodeScalars.contains($0)
    }
  }

  private static func name(of parameter: Substring) -> Substring {
    parameter.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).first ?? parameter
  }

  /// `20261124T120000Z` as seconds since 1970 (UTC).
  private static func amzDate(_ text: Substring) -> Double? {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "UTC")
    formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
    return formatter.date(from: String(text))?.timeIntervalSince1970
  }

  /// A URL cut at its first `#` (the fragment) and, before that, its first `?` (the query).
  private struct Parts {
    var base: Substring
    var query: Substring?
    var fragment: Substring

    init(_ url: String) {
      let hash = url.firstIndex(of: "#") ?? url.endIndex
      fragment = url[hash...]
      let beforeFragment = url[..<hash]
      if let question = beforeFragment.firstIndex(of: "?") {
        base = beforeFragment[..<question]
        query = beforeFragment[beforeFragment.index(after: question)...]
      } else {
        base = beforeFragment
        query = nil
      }
    }
  }
}

extension Unicode.Scalar {
  fileprivate var isASCIILetter: Bool { ("a"..."z").contains(self) || ("A"..."Z").contains(self) }
}
