import Foundation
public import Storage
public import ThumbCore
public import Transport

/// Originals kept in object storage, named `s3://BUCKET/KEY`: read with the worker's own S3 settings
/// (`--s3-endpoint`, `--s3-region`, `--s3-path-style` and the `AWS_*` credentials, the same as the
/// storage's), signed with SigV4 by libcurl, and only from the buckets `--source-buckets` names.
///
/// The key is everything after the bucket's slash, byte for byte, as the AWS CLI reads `s3://` URLs: it
/// is percent-encoded for the request, never decoded. The endpoint is the operator's own, so the
/// private-network block does not apply to it (a MinIO on the cluster's network is the usual case).
public struct S3Sources: Sendable {
  /// The buckets originals may be read from (`--source-buckets`).
  public var buckets: Set<String>
  /// `scheme://host[:port]`; nil: AWS's regional endpoint.
  public var endpoint: String?
  public var region: String
  public var pathStyle: Bool
  public var credentials: S3Credentials?

  public init(
    buckets: Set<String>, endpoint: String?, region: String, pathStyle: Bool, credentials: S3Credentials?
  ) {
    self.buckets = buckets
    self.endpoint = endpoint
    self.region = region
    self.pathStyle = pathStyle
    self.credentials = credentials
  }

  /// The bucket and key of `s3://BUCKET/KEY`; nil when `url` is not one (no key, or not s3).
  public static func object(in url: String) -> (bucket: String, key: String)? {
    guard url.lowercased().hasPrefix("s3://") else { return nil }
    let rest = url.dropFirst(5)
    guard let slash = rest.firstIndex(of: "/") else { return nil }
    let key = rest[rest.index(after: slash)...]
    guard !rest[..<slash].isEmpty, !key.isEmpty else { return nil }
    return (String(rest[..<slash]), String(key))
  }

  /// Why `bucket` cannot be a source bucket (S3's naming rules), or nil.
  public static func problem(bucket: String) -> String? {
    if case .failure(let error) = S3Location.parse(
      "s3://\(bucket)", endpoint: nil, region: "us-east-1", pathStyle: true)
    {
      return error.description
    }
    return nil
  }

  /// The signed GET that reads `url`, or why this worker may not read it (`blocked_source`).
  func request(for url: String) throws(JobError) -> SignedGet {
    let shown = SourceURL.shown(url)
    guard let (bucket, key) = Self.object(in: url) else {
      throw JobError(.blockedSource, "\(shown) is not s3://BUCKET/KEY")
    }
    guard buckets.contains(bucket) else {
      throw JobError(
        .blockedSource,
        "\(shown): the bucket '\(bucket)' is not one this worker reads originals from (--source-buckets)")
    }
    guard let credentials else {
      throw JobError(.storageRefused, "\(shown): no credentials to read it with (AWS_ACCESS_KEY_ID)")
    }
    return SignedGet(url: httpURL(bucket: bucket, key: key), credentials: credentials, region: region)
  }

  /// The HTTP URL of `key` in `bucket`, the key percent-encoded (every byte but unreserved ones and
  /// `/`, which is what SigV4's canonical path expects of S3: encoded once).
  func httpURL(bucket: String, key: String) -> String {
    let location = S3Location(
      bucket: bucket, prefix: "", endpoint: endpoint, region: region, pathStyle: pathStyle)
    return location.url(of: Self.percentEncoded(key))
  }

  static func percentEncoded(_ key: String) -> String {
    var encoded = ""
    for byte in key.utf8 {
      switch byte {
      case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
        UInt8(ascii: "~"), UInt8(ascii: "/"):
        encoded.unicodeScalars.append(UnicodeScalar(byte))
      default:
        encoded += String(format: "%%%02X", byte)
      }
    }
    return encoded
  }

  /// A key no original has: reading it tells whether the credentials reach the bucket at all.
  static let probeKey = ".thumbd-source-check"

  /// Asks `bucket` for a key that does not exist. NoSuchKey (or the object, if someone made it) means the
  /// credentials can read the bucket and tell a missing key from a refusal; a refusal throws
  /// `storage_refused` naming the S3 error code and what to grant; no answer throws `storage_failed`.
  public func checkBucket(_ bucket: String, multi: CurlMulti, timeout: Double = 10) async throws(JobError) {
    let what = "source bucket s3://\(bucket)"
    guard let credentials else {
      throw JobError(.storageRefused, "\(what): no credentials to read it with (AWS_ACCESS_KEY_ID)")
    }
    let get = SignedGet(
      url: httpURL(bucket: bucket, key: Self.probeKey), credentials: credentials, region: region)
    var request = HTTPRequest(method: .get, url: get.url, headers: get.headers, signing: get.signing)
    request.timeout = timeout
    request.userAgent = "thumbd/\(ThumbdVersion.current)"
    switch await multi.send(request) {
    case .success(let response):
      switch S3Answer.classify(status: response.status, body: response.text) {
      case .ok, .missing:
        return
      case .refused(let code):
        throw JobError(
          .storageRefused,
          "\(what) answered HTTP \(response.status) \(code): \(Self.advice(code))"
            + (endpoint.map { " (endpoint \($0))" } ?? ""))
      case .transient(let code, _):
        throw JobError(.storageFailed, "\(what): \(code)")
      }
    case .failure(let failure):
      throw JobError(.storageFailed, "\(what): \(failure.description)")
    }
  }

  /// What an answer to the GET of an original means, for anything but 2xx and 304. A refusal that no
  /// retry cures is the configuration's (`storage_refused`: the job is deferred, not failed); a 403
  /// AccessDenied may also be about this one object, which only the probe can tell (`needsProbe`).
  static func failure(status: Int, body: [UInt8], url: String) -> TransferFailure {
    let shown = SourceURL.shown(url)
    let text = String(decoding: body.prefix(64 * 1024), as: UTF8.self)
    switch S3Answer.classify(status: status, body: text) {
    case .ok:
      return TransferFailure(JobError(.httpError, "\(shown) answered HTTP \(status)"))
    case .missing:
      return TransferFailure(JobError(.notFound, "\(shown): no such key (HTTP \(status))"))
    case .transient(let code, let retryAfter):
      return TransferFailure(
        JobError(.fetchFailed, "\(shown) answered HTTP \(status) \(code)"), retryable: true,
        retryAfterSeconds: retryAfter)
    case .refused(let code):
      var failure = TransferFailure(
        JobError(.storageRefused, "\(shown) answered HTTP \(status) \(code): \(advice(code))"))
      failure.needsProbe = status == 403 && code == "AccessDenied"
      return failure
    }
  }

  /// What an operator should look at for a refusal of a source bucket.
  static func advice(_ code: String) -> String {
    switch code {
    case "AccessDenied":
      return
        "the credentials may not read this bucket (grant s3:GetObject on its objects and s3:ListBucket on it, without which a missing key is refused instead of not found)"
    case "NoSuchBucket": return "the bucket does not exist (check --source-buckets and --s3-endpoint)"
    default: return S3Store.advice(code)
    }
  }
}

/// A GET signed with SigV4 by libcurl: the object's HTTP URL and what signs it.
struct SignedGet: Sendable {
  var url: String
  var signing: HTTPRequest.Signing
  /// The payload hash S3 wants (a GET sends none: the SHA-256 of nothing) and the session token.
  var headers: [String]

  init(url: String, credentials: S3Credentials, region: String) {
    self.url = url
    signing = credentials.signing(region: region)
    headers = credentials.headers(payloadHash: S3Store.emptyHash)
  }
}
