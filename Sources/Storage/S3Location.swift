import Foundation

/// Where `s3://BUCKET/PREFIX` objects live and how requests address them.
///
///  * Virtual-hosted style (AWS's default): `https://BUCKET.s3.REGION.amazonaws.com/PREFIX/KEY`, or
///    `SCHEME://BUCKET.HOST/PREFIX/KEY` under a custom endpoint.
///  * Path style (`--s3-path-style`; MinIO, Ceph and most self-hosted servers): `ENDPOINT/BUCKET/PREFIX/KEY`.
public struct S3Location: Sendable, Equatable {
  public var bucket: String
  /// Without leading or trailing slashes; empty for the bucket's root.
  public var prefix: String
  /// `scheme://host[:port]`, without a path; nil: AWS's regional endpoint.
  public var endpoint: String?
  public var region: String
  public var pathStyle: Bool

  public init(bucket: String, prefix: String, endpoint: String?, region: String, pathStyle: Bool) {
    self.bucket = bucket
    self.prefix = prefix
    self.endpoint = endpoint
    self.region = region
    self.pathStyle = pathStyle
  }

  /// Parses `s3://bucket/prefix`. Bucket names follow S3's rules (3-63 lower-case letters, digits, dots
  /// and hyphens); prefixes are limited to characters that need no escaping in a URL or a signature.
  public static func parse(
    _ text: String, endpoint: String?, region: String, pathStyle: Bool
  ) -> Result<S3Location, LocationError> {
    guard text.lowercased().hasPrefix("s3://") else { return .failure(.init("is not an s3:// URL")) }
    let rest = text.dropFirst(5)
    let bucket = String(rest.prefix { $0 != "/" })
    let prefix = rest.dropFirst(bucket.count).split(separator: "/").joined(separator: "/")
    guard (3...63).contains(bucket.count),
      bucket.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "-" || $0 == ".") }),
      bucket.first?.isLetter == true || bucket.first?.isNumber == true
    else {
      return .failure(.init("'\(bucket)' is not a valid bucket name (3-63 of a-z, 0-9, '.', '-')"))
    }
    guard prefix.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_./".contains($0)) }) else {
      return .failure(.init("the prefix '\(prefix)' may hold only letters, digits and - _ . /"))
    }
    var base: String?
    if let endpoint, !endpoint.isEmpty {
      guard let url = URL(string: endpoint), let scheme = url.scheme?.lowercased(),
        scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty
      else { return .failure(.init("the endpoint '\(endpoint)' is not an http(s)://host[:port] URL")) }
      base = "\(scheme)://\(host)\(url.port.map { ":\($0)" } ?? "")"
    }
    return .success(
      S3Location(bucket: bucket, prefix: prefix, endpoint: base, region: region, pathStyle: pathStyle))
  }

  public struct LocationError: Error, Sendable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
  }

  /// The object name of `key` in the bucket.
  public func objectName(_ key: String) -> String { prefix.isEmpty ? key : "\(prefix)/\(key)" }

  /// The URL of `key`'s object.
  public func url(of key: String) -> String {
    let name = objectName(key)
    let base = endpoint ?? "https://s3.\(region).amazonaws.com"
    if pathStyle { return "\(base)/\(bucket)/\(name)" }
    let split = base.range(of: "://")!
    return "\(base[..<split.upperBound])\(bucket).\(base[split.upperBound...])/\(name)"
  }

  /// The URL of a ListObjectsV2 request for the keys under the prefix, in key order, after `after` (an
  /// object name).
  public func listURL(after: String?, maxKeys: Int) -> String {
    let base = endpoint ?? "https://s3.\(region).amazonaws.com"
    let bucketURL: String
    if pathStyle {
      bucketURL = "\(base)/\(bucket)/"
    } else {
      let split = base.range(of: "://")!
      bucketURL = "\(base[..<split.upperBound])\(bucket).\(base[split.upperBound...])/"
    }
    var query = ["list-type=2", "max-keys=\(maxKeys)"]
    if !prefix.isEmpty { query.append("prefix=" + Self.queryEncoded(prefix + "/")) }
    if let after { query.append("start-after=" + Self.queryEncoded(after)) }
    // In the order SigV4 sorts them, so that what curl signs is what it sends.
    return bucketURL + "?" + query.sorted().joined(separator: "&")
  }

  /// RFC 3986 unreserved characters stay; everything else (the slash too, as SigV4 wants in a query) is
  /// percent-encoded.
  static func queryEncoded(_ text: String) -> String {
    var out = ""
    for byte in text.utf8 {
      let c = Character(Unicode.Scalar(byte))
      if byte < 0x80 && (c.isLetter || c.isNumber || "-_.~".contains(c)) {
        out.append(c)
      } else {
        out += String(format: "%%%02X", byte)
      }
    }
    return out
  }

  /// `s3://bucket/prefix`, and the endpoint when it is not AWS's.
  public var identity: String {
    let place = prefix.isEmpty ? "s3://\(bucket)" : "s3://\(bucket)/\(prefix)"
    return endpoint.map { "\(place) at \($0)" } ?? place
  }
}
