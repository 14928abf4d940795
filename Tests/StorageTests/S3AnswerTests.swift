import Testing

@testable import Storage

/// What an S3 answer means: done, retry within the attempt, or the configuration's fault.
@Suite struct S3AnswerTests {
  func document(_ code: String) -> String {
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>\(code)</Code><Message>m</Message></Error>"
  }

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
}
