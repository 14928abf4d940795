import Foundation
import Hashing
import Storage
import Testing
import ThumbCore
import Transport

/// S3Store against the test S3 server (moto, signatures checked), mostly through s3-faults.py so every
/// request is logged and failures can be injected: what is stored, what is sent, what is retried and
/// what is refused.
@Suite(.serialized, .enabled(if: S3TestServer.current != nil, Comment(rawValue: S3TestServer.skipReason)))
struct S3StoreTests {
  let server = S3TestServer.current!
  /// Each test writes under a prefix of its own.
  let prefix = "store-tests/\(UUID().uuidString.lowercased())"

  func put(_ store: S3Store, _ key: String, _ bytes: [UInt8]) async -> Result<PutAnswer, JobError> {
    await Result { () async throws(JobError) in
      try await store.put(key: key, bytes: bytes, contentType: "image/jpeg")
    }
  }

  func check(_ store: S3Store) async -> Result<Void, JobError> {
    await Result { () async throws(JobError) in try await store.check() }
  }

  @Test func anUploadIsStoredWithItsTypeAndCacheControlAndSignedWithTheKeysHash() async throws {
    let proxy = try S3FaultProxy(upstream: server.endpoint)
    let store = try server.store(prefix: prefix, endpoint: proxy.endpoint)
    let (key, bytes) = contentAddressedObject()
    #expect(try await put(store, key, bytes).get() == .uploaded)

    let object = try server.download("\(prefix)/\(key)")
    #expect(object.status == 200)
    #expect(object.bytes == bytes)
    #expect(object.headers["content-type"] == "image/jpeg")
    #expect(object.headers["cache-control"] == "public, max-age=31536000, immutable")

    // HEAD first (missing), then one signed PUT carrying the key's own hash as the payload hash.
    let log = try proxy.log()
    #expect(log.map(\.method) == ["HEAD", "PUT"], "\(log.map(\.outcome))")
    #expect(log.map(\.outcome) == ["forwarded 404", "forwarded 200"])
    let sent = try #require(log.last)
    #expect(sent.path == "/\(server.bucket)/\(prefix)/\(key)")
    #expect(sent.signed)
    #expect(sent.headers["x-amz-content-sha256"] == StorageKey.contentHash(of: key))
    #expect(sent.headers["x-amz-content-sha256"] == Digest.sha256Hex(bytes))
    #expect(sent.headers["content-length"] == "\(bytes.count)")
    #expect(sent.headers["x-amz-security-token"] == nil)
    #expect(store.location(of: key) == "\(proxy.endpoint)/\(server.bucket)/\(prefix)/\(key)")
  }

  /// GetObject (the console shows thumbnails through it): the stored bytes, larger than the transport's
  /// default cap of answers, and nil for a key that is not there.
  @Test func anObjectIsReadBackAndAMissingOneIsNil() async throws {
    let store = try server.store(prefix: prefix)
    let bytes = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
    let key = StorageKey.contentAddressed(bytes, fileExtension: "jpg")
    #expect(try await put(store, key, bytes).get() == .uploaded)
    let read = try await store.get(key: key)
    #expect(read == bytes)
    let missing = StorageKey.contentAddressed([1, 2, 3], fileExtension: "jpg")
    #expect(try await store.get(key: missing) == nil)
  }

  @Test func aSecondPutOfTheSameKeySendsNothing() async throws {
    let proxy = try S3FaultProxy(upstream: server.endpoint)
    let store = try server.store(prefix: prefix, endpoint: proxy.endpoint)
    let (key, bytes) = contentAddressedObject()
    #expect(try await put(store, key, bytes).get() == .uploaded)
    #expect(try await put(store, key, bytes).get() == .alreadyStored)
    #expect(try proxy.requests("PUT").count == 1)
    #expect(try proxy.requests("HEAD").map(\.outcome) == ["forwarded 404", "forwarded 200"])
  }

  @Test(arguments: [(500, "InternalError"), (503, "SlowDown")])
  func serverErrorsAreRetriedWithinTheAttempt(status: Int, code: String) async throws {
    let proxy = try S3FaultProxy(upstream: server.endpoint)
    let store = try server.store(prefix: prefix, endpoint: proxy.endpoint)
    try proxy.inject(["status": status, "code": code, "count": 2, "method": "PUT"])
    let (key, bytes) = contentAddressedObject()
    let started = ContinuousClock.now
    #expect(try await put(store, key, bytes).get() == .uploaded)
    #expect(
      try proxy.requests("PUT").map(\.outcome) == ["fault \(status)", "fault \(status)", "forwarded 200"])
    // Backoff between the tries: 0.25 s, then 0.5 s (±25 %).
    #expect(started.duration(to: .now) >= .milliseconds(500))
    #expect(try server.download("\(prefix)/\(key)").bytes == bytes)
  }

  @Test func throttlingThatOutlastsTheRetriesIsAStorageFailure() async throws {
    let proxy = try S3FaultProxy(upstream: server.endpoint)
    let store = try server.store(
      prefix: prefix, endpoint: proxy.endpoint, timeout: 3,
      retry: FetchRetryPolicy(tries: 3, baseSeconds: 0.1))
    try proxy.inject(["status": 503, "code": "SlowDown", "count": -1, "method": "PUT"])
    let (key, bytes) = contentAddressedObject()
    let started = ContinuousClock.now
    let result = await put(store, key, bytes)
    #expect(started.duration(to: .now) < .seconds(4))
    guard case .failure(let error) = result else {
      Issue.record("stored despite endless 503s")
      return
    }
    #expect(error.code == .storageFailed, "\(error)")
    #expect(error.message.contains("SlowDown"), "\(error)")
    #expect(error.message.contains("after 3 tries"), "\(error)")
    #expect(try proxy.requests("PUT").map(\.outcome) == Array(repeating: "fault 503", count: 3))
  }

  @Test func theTimeoutBoundsThePutWhateverTheRetryPolicy() async throws {
    let proxy = try S3FaultProxy(upstream: server.endpoint)
    let store = try server.store(
      prefix: prefix, endpoint: proxy.endpoint, timeout: 1.5,
      retry: FetchRetryPolicy(tries: 100, baseSeconds: 0.2))
    try proxy.inject(["status": 503, "code": "SlowDown", "count": -1])
    let (key, bytes) = contentAddressedObject()
    let started = ContinuousClock.now
    let result = await put(store, key, bytes)
    #expect(started.duration(to: .now) < .seconds(3))
    #expect(result.failureCode == .storageFailed, "\(result)")
    let tries = try proxy.log().count
    #expect(tries >= 2 && tries < 100, "\(tries) requests")
  }

  @Test func aResetConnectionIsRetried() async throws {
    let proxy = try S3FaultProxy(upstream: server.endpoint)
    let store = try server.store(prefix: prefix, endpoint: proxy.endpoint)
    try proxy.inject(["reset": true, "count": 1, "method": "PUT"])
    let (key, bytes) = contentAddressedObject()
    #expect(try await put(store, key, bytes).get() == .uploaded)
    #expect(try proxy.requests("PUT").map(\.outcome) == ["reset", "forwarded 200"])
    #expect(try server.download("\(prefix)/\(key)").bytes == bytes)
  }

  @Test func aWrongSecretIsRefusedOnceAndNotRetried() async throws {
    let proxy = try S3FaultProxy(upstream: server.endpoint)
    let store = try server.store(
      prefix: prefix, endpoint: proxy.endpoint,
      credentials: S3Credentials(accessKey: server.accessKey, secretKey: "not-the-secret"))
    let (key, bytes) = contentAddressedObject()
    let result = await put(store, key, bytes)
    #expect(result.failureCode == .storageRefused, "\(result)")
    let message = result.failureMessage
    #expect(message.contains("SignatureDoesNotMatch"), "\(message)")
    #expect(message.contains("PUT s3://\(server.bucket)/\(prefix)/\(key)"), "\(message)")
    #expect(!message.contains("not-the-secret"))
    #expect(try proxy.requests("PUT").map(\.outcome) == ["forwarded 403"])
    #expect(try server.download("\(prefix)/\(key)").status == 404)
  }

  @Test func aMissingBucketIsRefusedAsSuch() async throws {
    let proxy = try S3FaultProxy(upstream: server.endpoint)
    let store = try server.store(prefix: prefix, bucket: "no-such-bucket-here", endpoint: proxy.endpoint)
    let (key, bytes) = contentAddressedObject()
    let result = await put(store, key, bytes)
    #expect(result.failureCode == .storageRefused, "\(result)")
    #expect(result.failureMessage.contains("NoSuchBucket"), "\(result)")
    #expect(result.failureMessage.contains("s3://no-such-bucket-here/"), "\(result)")
    #expect(try proxy.requests("PUT").count == 1)
  }

  @Test func sessionCredentialsSendTheirToken() async throws {
    let session = try #require(server.sessionCredentials, "THUMBD_TEST_S3_SESSION_* are not set")
    let proxy = try S3FaultProxy(upstream: server.endpoint)
    let store = try server.store(prefix: prefix, endpoint: proxy.endpoint, credentials: session)
    let (key, bytes) = contentAddressedObject()
    #expect(try await put(store, key, bytes).get() == .uploaded)
    #expect(try server.download("\(prefix)/\(key)").bytes == bytes)
    let sent = try proxy.log()
    #expect(sent.count == 2)
    #expect(
      sent.allSatisfy { $0.headers["x-amz-security-token"] == session.sessionToken }, "\(sent.map(\.headers))"
    )
  }

  @Test func aWrongSessionTokenIsRefusedAsAnInvalidToken() async throws {
    let session = try #require(server.sessionCredentials, "THUMBD_TEST_S3_SESSION_* are not set")
    var wrong = session
    wrong.sessionToken = "not-the-token"
    let proxy = try S3FaultProxy(upstream: server.endpoint)
    let store = try server.store(prefix: prefix, endpoint: proxy.endpoint, credentials: wrong)
    let (key, bytes) = contentAddressedObject()
    let result = await put(store, key, bytes)
    #expect(result.failureCode == .storageRefused, "\(result)")
    // The HEAD's refusal is a bare 400 (no body): the PUT's answer names the code.
    #expect(result.failureMessage.contains("HTTP 400 InvalidToken"), "\(result)")
    #expect(result.failureMessage.contains("AWS_SESSION_TOKEN"), "\(result)")
    #expect(try proxy.log().map(\.outcome) == ["forwarded 400", "forwarded 400"])
    let refused = await check(store)
    #expect(refused.failureCode == .storageRefused)
    #expect(refused.failureMessage.contains("InvalidToken"), "\(refused)")
  }

  /// Virtual-hosted addressing: `http://BUCKET.localhost:PORT/PREFIX/KEY` (curl resolves *.localhost to
  /// loopback), signed for that host.
  @Test func virtualHostedAddressingStoresTheObject() async throws {
    let store = try server.store(
      prefix: prefix, endpoint: "http://localhost:\(server.port)", pathStyle: false)
    let (key, bytes) = contentAddressedObject()
    #expect(store.location(of: key) == "http://\(server.bucket).localhost:\(server.port)/\(prefix)/\(key)")
    #expect(try await put(store, key, bytes).get() == .uploaded)
    let object = try server.download("\(prefix)/\(key)")
    #expect(object.bytes == bytes)
    #expect(object.headers["cache-control"] == "public, max-age=31536000, immutable")
    #expect(try await put(store, key, bytes).get() == .alreadyStored)
  }

  @Test func theStartUpCheckWritesItsObjectOrNamesTheRefusal() async throws {
    let proxy = try S3FaultProxy(upstream: server.endpoint)
    let store = try server.store(prefix: prefix, endpoint: proxy.endpoint)
    try await check(store).get()
    #expect(try server.download("\(prefix)/.thumbd-check").status == 200)
    #expect(try proxy.log().map(\.method) == ["PUT"])

    let wrongSecret = try server.store(
      prefix: prefix, credentials: S3Credentials(accessKey: server.accessKey, secretKey: "not-the-secret"))
    let refused = await check(wrongSecret)
    #expect(refused.failureCode == .storageRefused)
    #expect(
      refused.failureMessage.hasPrefix(
        "PUT s3://\(server.bucket)/\(prefix)/.thumbd-check answered HTTP 403 SignatureDoesNotMatch"),
      "\(refused)")

    let noBucket = try server.store(prefix: prefix, bucket: "no-such-bucket-here")
    let missing = await check(noBucket)
    #expect(missing.failureCode == .storageRefused)
    #expect(missing.failureMessage.contains("HTTP 404 NoSuchBucket"), "\(missing)")

    // A transient failure of the check is a storage failure, not a refusal: the worker waits for it.
    try proxy.inject(["status": 503, "code": "SlowDown", "count": -1])
    let throttled = try server.store(
      prefix: prefix, endpoint: proxy.endpoint, timeout: 1,
      retry: FetchRetryPolicy(tries: 2, baseSeconds: 0.05))
    #expect(await check(throttled).failureCode == .storageFailed)
  }

  @Test func anEmptyPrefixStoresAtTheBucketsRoot() async throws {
    let store = try server.store(prefix: "")
    let (key, bytes) = contentAddressedObject()
    #expect(try await put(store, key, bytes).get() == .uploaded)
    #expect(try server.download(key).bytes == bytes)
  }
}

extension Result where Failure == JobError {
  var failureCode: ErrorCode? {
    if case .failure(let error) = self { return error.code }
    return nil
  }

  var failureMessage: String {
    if case .failure(let error) = self { return error.message }
    return ""
  }
}
