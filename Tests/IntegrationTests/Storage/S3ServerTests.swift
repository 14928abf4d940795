import Foundation
import Testing

/// The S3 server `make test` starts (scripts/s3-temp.sh: moto with authentication on) really checks
/// signatures, the way thumbd will sign: libcurl's AWS SigV4 with `x-amz-content-sha256` sent as a
/// header (curl 7.88 does not add it). Without this the storage tests could pass against a server that
/// accepts anything.
@Suite(
  .enabled(
    if: S3TestServer.current != nil, "THUMBD_TEST_S3_ENDPOINT is not set: run the suite with `make test`"))
struct S3ServerTests {
  let server = S3TestServer.current!

  @Test func aCorrectlySignedUploadIsStoredAndReadBack() throws {
    let body = try temporaryFile("thumbd \(UUID().uuidString)")
    let key = "checks/\(UUID().uuidString).txt"
    let put = try server.curl(["-T", body.path], key: key)
    #expect(put.status == 200, "\(put.body)")
    let get = try server.curl([], key: key)
    let sent = try String(contentsOf: body, encoding: .utf8)
    #expect(get.status == 200 && get.body == sent)
  }

  @Test func aWrongSecretIsRefused() throws {
    let put = try server.curl(
      ["-T", temporaryFile("x").path], key: "checks/wrong.txt", secret: "not-the-secret")
    #expect(put.status == 403)
    #expect(put.body.contains("SignatureDoesNotMatch"), "\(put.body)")
  }

  @Test func aMissingBucketIsNamedAsSuch() throws {
    let put = try server.curl(["-T", temporaryFile("x").path], key: "x.txt", bucket: "no-such-bucket")
    #expect(put.status == 404)
    #expect(put.body.contains("NoSuchBucket"), "\(put.body)")
  }

  private func temporaryFile(_ text: String) throws -> URL {
    let url = try makeTemporaryDirectory().appendingPathComponent("body")
    try text.write(to: url, atomically: true, encoding: .utf8)
    return url
  }
}

/// The S3 server of the test run, from the variables scripts/with-s3.sh exports.
struct S3TestServer: Sendable {
  let endpoint: String
  let bucket: String
  let accessKey: String
  let secretKey: String
  /// Temporary credentials of an assumed role: moto checks their session token.
  let sessionAccessKey: String?
  let sessionSecretKey: String?
  let sessionToken: String?
  /// A private bucket of originals the main credentials may read, and a user who may not.
  let sourceBucket: String?
  let limitedAccessKey: String?
  let limitedSecretKey: String?
  /// A second server without authentication, which serves presigned URLs.
  let openEndpoint: String?

  static let current: S3TestServer? = {
    let environment = ProcessInfo.processInfo.environment
    guard let endpoint = environment["THUMBD_TEST_S3_ENDPOINT"],
      let bucket = environment["THUMBD_TEST_S3_BUCKET"],
      let accessKey = environment["THUMBD_TEST_S3_ACCESS_KEY"],
      let secretKey = environment["THUMBD_TEST_S3_SECRET_KEY"]
    else { return nil }
    return S3TestServer(
      endpoint: endpoint, bucket: bucket, accessKey: accessKey, secretKey: secretKey,
      sessionAccessKey: environment["THUMBD_TEST_S3_SESSION_ACCESS_KEY"],
      sessionSecretKey: environment["THUMBD_TEST_S3_SESSION_SECRET_KEY"],
      sessionToken: environment["THUMBD_TEST_S3_SESSION_TOKEN"],
      sourceBucket: environment["THUMBD_TEST_S3_SOURCE_BUCKET"],
      limitedAccessKey: environment["THUMBD_TEST_S3_LIMITED_ACCESS_KEY"],
      limitedSecretKey: environment["THUMBD_TEST_S3_LIMITED_SECRET_KEY"],
      openEndpoint: environment["THUMBD_TEST_S3_OPEN_ENDPOINT"])
  }()

  static let skipReason = "THUMBD_TEST_S3_ENDPOINT is not set: run the suite with `make test`"

  /// Writes `bytes` at `key` (percent-encoded here) in `bucket`, signed with the main credentials.
  func put(_ bytes: [UInt8], key: String, bucket: String) throws {
    let file = try makeTemporaryDirectory().appendingPathComponent("body")
    try Data(bytes).write(to: file)
    var allowed = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: "\u{0}"..."\u{7f}"))
    allowed.insert(charactersIn: "-._~/")
    let encoded = try #require(key.addingPercentEncoding(withAllowedCharacters: allowed))
    // With curl's default form type, moto would read the body as a form and store nothing.
    let answer = try curl(
      ["-X", "PUT", "-H", "Content-Type: image/jpeg", "--data-binary", "@\(file.path)"], key: encoded,
      bucket: bucket)
    #expect(answer.status == 200, "PUT \(key): \(answer.body)")
  }

  /// curl, signing with SigV4 for us-east-1 as thumbd will (path-style addressing).
  func curl(
    _ arguments: [String], key: String, bucket: String? = nil, secret: String? = nil
  ) throws -> (status: Int, body: String) {
    let url = "\(endpoint)/\(bucket ?? self.bucket)/\(key)"
    return try IntegrationTests.curl(
      [
        "-m", "10", "--aws-sigv4", "aws:amz:us-east-1:s3", "-u", "\(accessKey):\(secret ?? secretKey)", "-H",
        "x-amz-content-sha256: UNSIGNED-PAYLOAD",
      ] + arguments + [url])
  }
}
