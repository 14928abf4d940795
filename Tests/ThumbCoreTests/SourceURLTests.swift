import Foundation
import TestSupport
import Testing

@testable import ThumbCore

@Suite struct SourceURLTests {
  @Test func aURLThatCanNeverBeFetchedSaysWhy() {
    for (url, problem) in sourceProblemCases {
      #expect(SourceURL.problem(url)?.description == problem, "\(url)")
    }
  }

  @Test func identityDropsOnlyTheSignatureParameters() {
    for (url, identity) in sourceIdentityCases {
      #expect(SourceURL.identity(url) == identity, "\(url)")
    }
  }

  @Test func twoSigningsOfOneObjectHaveOneIdentity() {
    let first =
      "https://b.s3.amazonaws.com/k.jpg?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20261124T120000Z"
      + "&X-Amz-Expires=60&X-Amz-Signature=aaaa"
    let second =
      "https://b.s3.amazonaws.com/k.jpg?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20261124T130000Z"
      + "&X-Amz-Expires=900&X-Amz-Signature=bbbb"
    #expect(SourceURL.identity(first) == SourceURL.identity(second))
    #expect(
      SourceURL.identity(first)
        != SourceURL.identity("https://b.s3.amazonaws.com/other.jpg?X-Amz-Signature=aaaa"))
  }

  @Test func secretsAreMaskedAndNothingElse() {
    #expect(SourceURL.redacted("http://user:hunter2@host/a.jpg") == "http://user:****@host/a.jpg")
    #expect(SourceURL.redacted("http://user@host/a.jpg") == "http://user@host/a.jpg")
    let presigned =
      "https://b.s3.amazonaws.com/k.jpg?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F2026"
      + "&X-Amz-Date=20261124T120000Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host&X-Amz-Signature=deadbeef"
      + "&X-Amz-Security-Token=tok"
    #expect(
      SourceURL.redacted(presigned)
        == "https://b.s3.amazonaws.com/k.jpg?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=****"
        + "&X-Amz-Date=20261124T120000Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host&X-Amz-Signature=****"
        + "&X-Amz-Security-Token=****")
    #expect(
      SourceURL.redacted("https://b.example/k.jpg?AWSAccessKeyId=AKIA&Expires=1&Signature=abc")
        == "https://b.example/k.jpg?AWSAccessKeyId=****&Expires=1&Signature=****")
    #expect(SourceURL.redacted("https://b.example/k.jpg?sig=1&a=b") == "https://b.example/k.jpg?sig=1&a=b")
  }

  @Test func secretsInFreeTextAreMasked() {
    let message =
      "GET https://u:p4ss@h.example/x.jpg?X-Amz-Signature=abc123&v=1 failed; "
      + "retrying 'http://other:pw@10.0.0.1:8080/y'"
    let masked = SourceURL.redactingSecrets(in: message)
    #expect(!masked.contains("p4ss") && !masked.contains("abc123") && !masked.contains(":pw@"))
    #expect(masked.contains("https://u:****@h.example/x.jpg?X-Amz-Signature=****&v=1 failed"))
    #expect(masked.contains("'http://other:****@10.0.0.1:8080/y'"))
    #expect(SourceURL.redactingSecrets(in: "key=value a@b") == "key=value a@b")
  }

  @Test func shownURLsAreRedactedAndShort() {
    let long = "http://user:secret@host/" + String(repeating: "a", count: 400)
    let shown = SourceURL.shown(long)
    #expect(shown.count == 200 && shown.hasPrefix("http://user:****@host/"))
  }

  @Test func expiryIsTheSigningDatePlusItsLifetime() throws {
    let sigV4 = "https://b.example/k?X-Amz-Date=20261124T120000Z&X-Amz-Expires=3600&X-Amz-Signature=x"
    // 2026-11-24T13:00:00Z
    #expect(SourceURL.expiry(sigV4) == 1_795_525_200)
    #expect(
      SourceURL.expiry("https://b.example/k?AWSAccessKeyId=a&Expires=1790000000&Signature=s") == 1_790_000_000
    )
    #expect(SourceURL.expiry("https://b.example/k?X-Amz-Date=2026-11-24&X-Amz-Expires=60") == nil)
    #expect(SourceURL.expiry("https://b.example/k.jpg") == nil)
  }
}
