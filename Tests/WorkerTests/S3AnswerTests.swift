import Storage
import Testing

@testable import Worker

/// What an S3 answer means (done, retry within the attempt, or the configuration's fault), where an
/// object's URL is, and how the worker's options name the bucket, the endpoint and the credentials.
@Suite struct S3AnswerTests {
  func document(_ code: String) -> String {
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>\(code)</Code><Message>m</Message></Error>"
  }

  // MARK: S3Answer

  @Test func successAndMissingObjects() {
    #expect(S3Answer.classify(status: 200, body: "") == .ok)
    #expect(S3Answer.classify(status: 204, body: "") == .ok)
    #expect(S3Answer.classify(status: 404, body: "") == .missing)
    #expect(S3Answer.classify(status: 404, body: document("NoSuchKey")) == .missing)
    // A 404 that names the bucket is the configuration's, not an object to upload.
    #expect(S3Answer.classify(status: 404, body: document("NoSuchBucket")) == .refused(code: "NoSuchBucket"))
  }

  @Test func throttlingAndServerErrorsAreTransient() {
    #expect(
      S3Answer.classify(status: 503, body: document("SlowDown"), retryAfter: 2)
        == .transient(code: "SlowDown", retryAfter: 2))
    #expect(
      S3Answer.classify(status: 500, body: document("InternalError"))
        == .transient(code: "InternalError", retryAfter: nil))
    #expect(
      S3Answer.classify(status: 502, body: "<html>bad gateway</html>")
        == .transient(code: "HTTP 502", retryAfter: nil))
    #expect(S3Answer.classify(status: 429, body: "") == .transient(code: "HTTP 429", retryAfter: nil))
    #expect(
      S3Answer.classify(status: 408, body: document("RequestTimeout"))
        == .transient(code: "RequestTimeout", retryAfter: nil))
    #expect(S3Answer.classify(status: 503, body: "") == .transient(code: "HTTP 503", retryAfter: nil))
    // A server error that names a configuration code is still retried: the status decides for 5xx.
    #expect(
      S3Answer.classify(status: 503, body: document("AccessDenied"))
        == .transient(code: "AccessDenied", retryAfter: nil))
  }

  @Test(arguments: [
    (403, "SignatureDoesNotMatch"), (403, "AccessDenied"), (403, "InvalidAccessKeyId"), (400, "InvalidToken"),
    (400, "ExpiredToken"), (301, "PermanentRedirect"), (400, "AuthorizationHeaderMalformed"),
    (400, "InvalidBucketName"), (405, "MethodNotAllowed"), (400, "InvalidRequest"),
  ])
  func configurationProblemsAreRefusals(status: Int, code: String) {
    #expect(S3Answer.classify(status: status, body: document(code)) == .refused(code: code))
  }

  @Test func otherClientErrorsOfThisRequestAreTriedAfresh() {
    // A digest mismatch or a conflicting write: the next try builds the request again.
    #expect(
      S3Answer.classify(status: 400, body: document("BadDigest"))
        == .transient(code: "BadDigest", retryAfter: nil))
    #expect(
      S3Answer.classify(status: 409, body: document("OperationAborted"))
        == .transient(code: "OperationAborted", retryAfter: nil))
    #expect(
      S3Answer.classify(status: 412, body: document("PreconditionFailed"))
        == .transient(code: "PreconditionFailed", retryAfter: nil))
    // Not for other statuses: an unknown 403 is a refusal.
    #expect(S3Answer.classify(status: 403, body: document("SomethingNew")) == .refused(code: "SomethingNew"))
  }

  @Test func bodilessRefusalsAreNamedByTheirStatus() {
    #expect(S3Answer.classify(status: 403, body: "") == .refused(code: "AccessDenied"))
    #expect(S3Answer.classify(status: 400, body: "") == .refused(code: "BadRequest"))
    #expect(S3Answer.classify(status: 401, body: "") == .refused(code: "Unauthorized"))
    #expect(S3Answer.classify(status: 301, body: "") == .refused(code: "PermanentRedirect"))
    #expect(S3Answer.classify(status: 405, body: "") == .refused(code: "MethodNotAllowed"))
    #expect(S3Answer.classify(status: 418, body: "") == .refused(code: "HTTP 418"))
  }

  @Test func theErrorCodeIsTheFirstCodeElement() {
    #expect(S3Answer.errorCode(in: document("SlowDown")) == "SlowDown")
    #expect(S3Answer.errorCode(in: "<Error><Code>A</Code><Code>B</Code></Error>") == "A")
    #expect(S3Answer.errorCode(in: "<Error><Code>Some.Code2</Code></Error>") == "Some.Code2")
    #expect(S3Answer.errorCode(in: "") == nil)
    #expect(S3Answer.errorCode(in: "<html>503 Service Unavailable</html>") == nil)
    #expect(S3Answer.errorCode(in: "<Error><Code></Code></Error>") == nil)
    #expect(S3Answer.errorCode(in: "<Error><Code>Unclosed") == nil)
    // Nothing that could smuggle markup or spaces into a log line or a metric label.
    #expect(S3Answer.errorCode(in: "<Code>Access Denied</Code>") == nil)
    #expect(S3Answer.errorCode(in: "<Code><b>x</b></Code>") == nil)
    #expect(S3Answer.errorCode(in: "<Code>\(String(repeating: "A", count: 65))</Code>") == nil)
    #expect(S3Answer.errorCode(in: "<Code>\(String(repeating: "A", count: 64))</Code>")?.count == 64)
  }

  // MARK: S3Location

  func parse(
    _ text: String, endpoint: String? = nil, region: String = "eu-west-1", pathStyle: Bool = false
  ) -> S3Location? {
    try? S3Location.parse(text, endpoint: endpoint, region: region, pathStyle: pathStyle).get()
  }

  func problem(_ text: String, endpoint: String? = nil) -> String? {
    if case .failure(let error) = S3Location.parse(
      text, endpoint: endpoint, region: "us-east-1", pathStyle: false)
    {
      return error.description
    }
    return nil
  }

  @Test func awsDefaultIsVirtualHostedRegional() throws {
    let location = try #require(parse("s3://my-bucket/thumbs/v1"))
    #expect(location.bucket == "my-bucket" && location.prefix == "thumbs/v1" && location.endpoint == nil)
    #expect(
      location.url(of: "ab/cd/x.jpg") == "https://my-bucket.s3.eu-west-1.amazonaws.com/thumbs/v1/ab/cd/x.jpg")
    #expect(location.identity == "s3://my-bucket/thumbs/v1")
  }

  @Test func pathStyleUnderAnEndpointWithAPort() throws {
    let location = try #require(
      parse("s3://thumbs.example/p", endpoint: "http://minio.local:9000/ignored/path", pathStyle: true))
    #expect(location.endpoint == "http://minio.local:9000")
    #expect(location.url(of: "ab/cd/x.jpg") == "http://minio.local:9000/thumbs.example/p/ab/cd/x.jpg")
    #expect(location.identity == "s3://thumbs.example/p at http://minio.local:9000")
    let aws = try #require(parse("s3://b12/p", pathStyle: true))
    #expect(aws.url(of: "k") == "https://s3.eu-west-1.amazonaws.com/b12/p/k")
  }

  @Test func virtualHostedUnderACustomEndpoint() throws {
    let location = try #require(parse("s3://bucket/p", endpoint: "HTTPS://r2.example.com:8443"))
    #expect(location.url(of: "k.jpg") == "https://bucket.r2.example.com:8443/p/k.jpg")
  }

  @Test func prefixesAreNormalisedAndMayBeEmpty() throws {
    #expect(parse("s3://bucket")?.prefix == "")
    #expect(parse("s3://bucket/")?.prefix == "")
    #expect(parse("s3://bucket//a//b/")?.prefix == "a/b")
    let root = try #require(parse("s3://bucket"))
    #expect(root.url(of: "ab/k.jpg") == "https://bucket.s3.eu-west-1.amazonaws.com/ab/k.jpg")
    #expect(root.objectName("ab/k.jpg") == "ab/k.jpg")
    #expect(root.identity == "s3://bucket")
    #expect(parse("S3://bucket/A_b-c.d/e")?.prefix == "A_b-c.d/e")
  }

  @Test(arguments: [
    "s3://ab/p", "s3://\(String(repeating: "a", count: 64))/p", "s3://My-Bucket/p", "s3://my_bucket/p",
    "s3://-bucket/p", "s3:///p", "s3://bucket:1/p",
  ])
  func invalidBucketNamesAreRefused(text: String) {
    #expect(problem(text)?.contains("is not a valid bucket name") == true, "\(text)")
  }

  @Test func edgeBucketNamesAreAccepted() {
    #expect(parse("s3://abc") != nil)
    #expect(parse("s3://\(String(repeating: "a", count: 63))") != nil)
    #expect(parse("s3://1bucket.with.dots") != nil)
  }

  @Test(arguments: [
    "s3://bucket/a b", "s3://bucket/a?b", "s3://bucket/é", "s3://bucket/a%20b", "s3://bucket/a+b",
  ])
  func prefixesNeedingEscapesAreRefused(text: String) {
    #expect(problem(text)?.contains("the prefix") == true, "\(text)")
  }

  @Test func otherURLsAndEndpointsAreRefused() {
    #expect(problem("file:///srv/thumbs") == "is not an s3:// URL")
    #expect(problem("https://bucket/p") == "is not an s3:// URL")
    #expect(problem("s3://bucket/p", endpoint: "ftp://host")?.contains("is not an http(s)://host") == true)
    #expect(
      problem("s3://bucket/p", endpoint: "localhost:9000")?.contains("is not an http(s)://host") == true)
    #expect(problem("s3://bucket/p", endpoint: "") == nil, "an empty endpoint means AWS's")
  }

  // MARK: WorkerConfig

  let base = ["DATABASE_URL": "postgresql://db/thumbs"]
  let credentials = ["AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": "wJalrSECRETKEYexample"]

  func resolve(_ arguments: [String], env: [String: String]) -> SettingsResolution {
    WorkerConfig.resolve(arguments: arguments, environment: base.merging(env) { $1 }, readFile: { _ in "" })
  }

  @Test func theS3OptionsReachTheStorageSettings() {
    let result = resolve(
      [
        "--storage", "s3://thumbs/v1", "--s3-endpoint", "http://127.0.0.1:9000", "--s3-path-style",
        "--s3-region", "eu-central-1",
      ],
      env: credentials)
    #expect(result.errors.isEmpty, "\(result.errors)")
    let storage = result.settings.storageSettings
    #expect(storage.url == "s3://thumbs/v1")
    #expect(storage.s3Endpoint == "http://127.0.0.1:9000")
    #expect(storage.s3PathStyle)
    #expect(storage.s3Region == "eu-central-1" && result.sources["s3-region"] == .flag)
    #expect(storage.s3Credentials?.accessKey == "AKIAEXAMPLE")
    #expect(storage.s3Credentials?.sessionToken == nil)

    let fromEnv = resolve(
      [],
      env: credentials.merging([
        "THUMBD_STORAGE": "s3://thumbs", "THUMBD_S3_ENDPOINT": "https://s3.example",
        "THUMBD_S3_PATH_STYLE": "1",
      ]) { $1 })
    #expect(fromEnv.errors.isEmpty, "\(fromEnv.errors)")
    #expect(
      fromEnv.settings.s3PathStyle
        && fromEnv.sources["s3-path-style"] == .environment("THUMBD_S3_PATH_STYLE"))
    #expect(fromEnv.settings.s3Endpoint == "https://s3.example")
  }

  @Test func theRegionFallsBackToAWSRegionThenUSEast1() {
    let fallback = resolve(
      ["--storage", "s3://thumbs"], env: credentials.merging(["AWS_REGION": "ap-south-1"]) { $1 })
    #expect(fallback.settings.s3Region == "ap-south-1")
    #expect(fallback.sources["s3-region"] == .environment("AWS_REGION"))
    #expect(fallback.report.contains("s3-region: ap-south-1  # env"), "\(fallback.report)")

    let ours = resolve(
      ["--storage", "s3://thumbs"],
      env: credentials.merging(["AWS_REGION": "ap-south-1", "THUMBD_S3_REGION": "eu-north-1"]) { $1 })
    #expect(ours.settings.s3Region == "eu-north-1")
    #expect(ours.sources["s3-region"] == .environment("THUMBD_S3_REGION"))

    let none = resolve(["--storage", "s3://thumbs"], env: credentials)
    #expect(none.settings.s3Region == "us-east-1" && none.sources["s3-region"] == .default)
  }

  @Test func missingCredentialsAreAnErrorOnStorage() {
    for env in [
      [:], ["AWS_ACCESS_KEY_ID": "AKIAEXAMPLE"], ["AWS_SECRET_ACCESS_KEY": "x", "AWS_ACCESS_KEY_ID": ""],
    ] {
      let result = resolve(["--storage", "s3://thumbs/v1"], env: env)
      #expect(result.errors.map(\.key) == ["storage"], "\(result.errors)")
      #expect(result.errors.first?.message.contains("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY") == true)
    }
    // A file:// store needs none.
    #expect(resolve(["--storage", "file:///srv/thumbs"], env: [:]).errors.isEmpty)
  }

  @Test func badS3ValuesAreErrorsOnTheirKeys() {
    let result = resolve(
      ["--storage", "s3://Bad_Bucket/p", "--s3-endpoint", "minio:9000", "--s3-region", "eu west"],
      env: credentials)
    let keys = Set(result.errors.map(\.key))
    #expect(keys == ["storage", "s3-endpoint", "s3-region"], "\(result.errors)")
    #expect(result.errors.first { $0.key == "storage" }?.message.contains("bucket name") == true)
  }

  @Test func theSecretAndTheTokenNeverAppearInTheReport() {
    let token = "IQoJb3JpZ2luX2VjEXAMPLETOKEN"
    let result = resolve(
      ["--storage", "s3://thumbs/v1"], env: credentials.merging(["AWS_SESSION_TOKEN": token]) { $1 })
    #expect(result.errors.isEmpty, "\(result.errors)")
    #expect(result.settings.s3Credentials?.sessionToken == token)
    let report = result.report.joined(separator: "\n")
    #expect(report.contains("storage: s3://thumbs/v1"), "\(report)")
    #expect(!report.contains("wJalrSECRETKEYexample"))
    #expect(!report.contains(token))
    let secrets = result.settings.secrets
    #expect(secrets.contains("wJalrSECRETKEYexample"))
    #expect(secrets.contains(token))
    #expect(!secrets.contains("AKIAEXAMPLE"), "the access key id is not a secret")
    // What the log formatter does with any line that carries them.
    let line = redacting("signing with wJalrSECRETKEYexample and \(token)", secrets: secrets)
    #expect(line == "signing with **** and ****")
    #expect(!"\(result.settings.s3Credentials!)".contains("wJalrSECRETKEYexample"))
    #expect(!"\(result.settings.s3Credentials!)".contains(token))
  }
}
