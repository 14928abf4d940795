import Foundation
import Testing

@testable import ThumbCore

@Suite struct RetryPolicyTests {
  let policy = RetryPolicy(baseSeconds: 10, capSeconds: 300, jitter: 0.25)

  @Test func growsExponentiallyUpToTheCap() {
    #expect(policy.delay(afterAttempt: 1, unit: 0) == 10)
    #expect(policy.delay(afterAttempt: 3, unit: 0) == 40)
    #expect(policy.delay(afterAttempt: 10, unit: 0) == 300)
    #expect(policy.delay(afterAttempt: 1000, unit: 0) == 300)
  }

  @Test func jitterOnlyShortens() {
    #expect(policy.delay(afterAttempt: 2, unit: 0.999) > 15)
    #expect(policy.delay(afterAttempt: 2, unit: 0.999) <= 20)
  }

  @Test func permanentErrorsAndLastAttemptsFail() {
    #expect(policy.decide(code: .notFound, attempt: 1, maxAttempts: 5, unit: 0) == .fail)
    #expect(policy.decide(code: .corruptImage, attempt: 1, maxAttempts: 5, unit: 0) == .fail)
    #expect(policy.decide(code: .fetchFailed, attempt: 5, maxAttempts: 5, unit: 0) == .fail)
    #expect(
      policy.decide(code: .fetchFailed, attempt: 2, maxAttempts: 5, unit: 0) == .retry(afterSeconds: 20))
    #expect(policy.decide(code: .timeout, attempt: 1, maxAttempts: 5, unit: 0) == .retry(afterSeconds: 10))
  }

  @Test func contractVocabularyIsStable() {
    let contract = [
      "not_found", "http_error", "fetch_failed", "timeout", "too_large", "blocked_source",
      "unsupported_format", "corrupt_image", "over_memory_budget", "storage_failed",
    ]
    for code in contract { #expect(ErrorCode(rawValue: code) != nil, "\(code)") }
  }
}
