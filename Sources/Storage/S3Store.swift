import Foundation
import Hashing
public import ThumbCore
public import Transport

/// Credentials for S3, from the standard `AWS_*` variables. Never logged: `description` masks them.
public struct S3Credentials: Sendable, CustomStringConvertible {
  public var accessKey: String
  public var secretKey: String
  public var sessionToken: String?

  public init(accessKey: String, secretKey: String, sessionToken: String? = nil) {
    self.accessKey = accessKey
    self.secretKey = secretKey
    self.sessionToken = sessionToken
  }

  /// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and optional `AWS_SESSION_TOKEN`; nil when a key is
  /// missing.
  public static func from(environment: [String: String]) -> S3Credentials? {
    guard let key = environment["AWS_ACCESS_KEY_ID"], !key.isEmpty,
      let secret = environment["AWS_SECRET_ACCESS_KEY"], !secret.isEmpty
    else { return nil }
    let token = environment["AWS_SESSION_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
    return S3Credentials(accessKey: key, secretKey: secret, sessionToken: token)
  }

  /// The SigV4 signing of a request to S3 in `region`.
  public func signing(region: String) -> HTTPRequest.Signing {
    HTTPRequest.Signing(scope: "aws:amz:\(region):s3", accessKey: accessKey, secretKey: secretKey)
  }

  /// The headers every S3 request carries besides its own: the payload's SHA-256 (which S3 wants
  /// signed) and, with temporary credentials, the session token.
  public func headers(payloadHash: String) -> [String] {
    ["x-amz-content-sha256: \(payloadHash)"] + (sessionToken.map { ["x-amz-security-token: \($0)"] } ?? [])
  }

  public var secrets: [String] { [secretKey] + (sessionToken.map { [$0] } ?? []) }
  public var description: String {
    "\(accessKey) (secret ****\(sessionToken == nil ? "" : ", session token ****"))"
  }
}

/// Thumbnails in an S3-compatible bucket (AWS, MinIO, R2, Ceph, ...), written through the worker's curl
/// transfer thread and signed by libcurl (CURLOPT_AWS_SIGV4).
///
/// Each put asks first whether the object exists (HEAD): content-addressed keys mean an existing object
/// is the same bytes, so it is not sent again. (The answer is not remembered: an operator's sweep of
/// orphaned objects may delete a key between two jobs.) The payload's SHA-256, which S3 wants in
/// `x-amz-content-sha256`, is the key's own name: nothing is hashed twice.
public final class S3Store: ThumbnailStore {
  public let location: S3Location
  let credentials: S3Credentials
  let multi: CurlMulti
  /// The whole of one put, its retries and their waits included.
  let timeout: Double
  let retry: FetchRetryPolicy

  public init(
    location: S3Location, credentials: S3Credentials, multi: CurlMulti, timeout: Double = 30,
    retry: FetchRetryPolicy = FetchRetryPolicy(tries: 4, baseSeconds: 0.25)
  ) {
    self.location = location
    self.credentials = credentials
    self.multi = multi
    self.timeout = timeout
    self.retry = retry
  }

  public var identity: String { location.identity }

  /// Every request, retries included, runs against one deadline of `timeout`.
  public var longestOperationSeconds: Double { timeout }

  public func location(of key: String) -> String { location.url(of: key) }

  static let cacheControl = "public, max-age=31536000, immutable"
  /// The SHA-256 of an empty payload, S3's `x-amz-content-sha256` for a request without a body.
  public static let emptyHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

  public func put(key: String, bytes: [UInt8], contentType: String) async throws(JobError) -> PutAnswer {
    let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
    let exists = try await exchange(.head, key: key, deadline: deadline).answer
    if exists == .ok { return .alreadyStored }
    let hash = StorageKey.contentHash(of: key) ?? Digest.sha256Hex(bytes)
    _ = try await exchange(
      .put, key: key, deadline: deadline, body: bytes,
      headers: ["Content-Type: \(contentType)", "Cache-Control: \(Self.cacheControl)"], payloadHash: hash)
    return .uploaded
  }

  /// DELETE answers 204 whether or not the object was there (and an imitator's 404 is taken the same).
  public func delete(key: String) async throws(JobError) {
    let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
    _ = try await exchange(.delete, key: key, deadline: deadline)
  }

  /// GetObject (s3:GetObject); a 404 is nil.
  public func get(key: String) async throws(JobError) -> [UInt8]? {
    let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
    let (answer, body) = try await exchange(.get, key: key, deadline: deadline, maxAnswerBytes: 64 << 20)
    return answer == .missing ? nil : body
  }

  /// One ListObjectsV2 page under the prefix (s3:ListBucket), keys that are not content-addressed left
  /// out.
  public func list(after key: String?, limit: Int) async throws(JobError) -> StoredObjects {
    let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
    let url = location.listURL(after: key.map { location.objectName($0) }, maxKeys: limit)
    let page = try await exchange(.get, key: "", deadline: deadline, url: url)
    let listing = S3Listing(xml: String(decoding: page.body, as: UTF8.self))
    let prefix = location.prefix.isEmpty ? "" : location.prefix + "/"
    let objects = listing.objects.compactMap { object -> StoredObject? in
      guard object.name.hasPrefix(prefix) else { return nil }
      let key = String(object.name.dropFirst(prefix.count))
      guard StorageKey.contentHash(of: key) != nil else { return nil }
      return StoredObject(key: key, modified: object.modified)
    }
    let last = listing.objects.last.map { String($0.name.dropFirst(prefix.count)) }
    return StoredObjects(objects: objects, next: listing.truncated ? last : nil)
  }

  /// Writes one small object, `PREFIX/.thumbd-check`: the one permission a worker needs (PutObject)
  /// is the one checked. (A HEAD of the bucket would need another, and its answer has no error code.)
  public func check() async throws(JobError) {
    let body = Array("thumbd storage check: this worker can write here\n".utf8)
    let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
    _ = try await exchange(
      .put, key: ".thumbd-check", deadline: deadline, body: body, headers: ["Content-Type: text/plain"],
      payloadHash: Digest.sha256Hex(body))
  }

  /// One request, retried while the answer is transient and the deadline allows. HEAD answers `.ok`
  /// or `.missing`; a refusal throws `storage_refused`, a transient failure that outlived its retries
  /// `storage_failed`.
  private func exchange(
    _ method: HTTPRequest.Method, key: String, deadline: ContinuousClock.Instant, body: [UInt8] = [],
    headers: [String] = [], payloadHash: String = S3Store.emptyHash, url: String? = nil,
    maxAnswerBytes: Int? = nil
  ) async throws(JobError) -> (answer: S3Answer, body: [UInt8]) {
    var tryNumber = 0
    while true {
      tryNumber += 1
      let secondsLeft = ContinuousClock.now.duration(to: deadline).inSeconds
      let what = "\(method.rawValue) s3://\(location.bucket)/\(location.objectName(key))"
      guard secondsLeft > 0.01 else {
        throw JobError(.storageFailed, "\(what): no answer within \(timeout) s")
      }
      var request = HTTPRequest(
        method: method, url: url ?? location.url(of: key),
        headers: headers + credentials.headers(payloadHash: payloadHash), body: body,
        signing: credentials.signing(region: location.region))
      request.timeout = secondsLeft
      // A GetObject may be a large variant (the console's); other answers keep the transport's cap.
      if let maxAnswerBytes { request.maxResponseBytes = maxAnswerBytes }
      request.userAgent = "thumbd/\(ThumbdVersion.current)"
      let answer: S3Answer
      var answerBody: [UInt8] = []
      switch await multi.send(request) {
      case .success(let response):
        let retryAfter = response.headers["retry-after"].flatMap {
          RetryAfter.seconds($0, now: Date().timeIntervalSince1970)
        }
        answerBody = response.body
        answer = S3Answer.classify(status: response.status, body: response.text, retryAfter: retryAfter)
        if case .refused = answer, method == .head {
          // Without read permission a HEAD is refused even for objects that exist; and a HEAD answer
          // has no body, so its refusal names no code (a bad session token is a bare 400): upload and
          // let the PUT's own answer decide, and name the code.
          return (.missing, [])
        }
        if case .refused(let code) = answer {
          throw JobError(
            .storageRefused,
            "\(what) answered HTTP \(response.status) \(code): \(Self.advice(code, method: method))"
              + (location.endpoint.map { " (endpoint \($0))" } ?? "")
          )
        }
      case .failure(let failure):
        if failure.isCancelled { throw JobError(.internalError, "\(what): cancelled") }
        answer = .transient(code: failure.description, retryAfter: nil)
      }
      guard case .transient(let code, let retryAfter) = answer else { return (answer, answerBody) }
      let decision = retry.decide(
        afterTry: tryNumber, retryAfter: retryAfter,
        secondsLeft: ContinuousClock.now.duration(to: deadline).inSeconds, unit: Double.random(in: 0..<1))
      switch decision {
      case .stop(let notBefore):
        throw JobError(
          .storageFailed, "\(what): \(code) (after \(tryNumber) tries)", retryNotBeforeSeconds: notBefore)
      case .retry(let seconds):
        try? await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
        if Task.isCancelled { throw JobError(.internalError, "\(what): cancelled") }
      }
    }
  }

  /// What an operator should look at for a refusal.
  public static func advice(_ code: String, method: HTTPRequest.Method = .put) -> String {
    switch code {
    case "NoSuchBucket": return "the bucket does not exist (check --storage and --s3-endpoint)"
    case "SignatureDoesNotMatch": return "the secret key is wrong (AWS_SECRET_ACCESS_KEY)"
    case "InvalidAccessKeyId": return "the access key is unknown (AWS_ACCESS_KEY_ID)"
    case "InvalidToken", "ExpiredToken", "TokenRefreshRequired":
      return "the session token is invalid or expired (AWS_SESSION_TOKEN)"
    case "AccessDenied" where method == .delete:
      return
        "the credentials may not delete here (s3:DeleteObject on the prefix): collection cannot remove objects"
    case "AccessDenied" where method == .get:
      return "the credentials may not list here (s3:ListBucket on the bucket)"
    case "AccessDenied": return "the credentials may not write here (s3:PutObject on the prefix)"
    case "PermanentRedirect", "AuthorizationHeaderMalformed":
      return "the bucket is in another region or behind another endpoint (--s3-region, --s3-endpoint)"
    default: return "the storage refuses this worker's requests"
    }
  }
}
