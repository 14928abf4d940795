import Foundation
import Hashing
import Testing
import ThumbCore
import Worker

/// What a webhook POST comes to, and the signature header: pure, no I/O.
struct WebhookRetryTests {
  let retry = WebhookRetry()

  @Test func twoHundredsDeliverA410StopsAndTheRestRetryWithGrowingWaits() {
    #expect(retry.verdict(.status(204), attempts: 1, firstAttempt: 0, now: 0, unit: 0) == .delivered)
    #expect(retry.verdict(.status(410), attempts: 1, firstAttempt: 0, now: 0, unit: 0) == .stopped)
    #expect(retry.verdict(.status(500), attempts: 1, firstAttempt: 0, now: 0, unit: 0) == .retry(after: 5))
    #expect(retry.verdict(.status(404), attempts: 3, firstAttempt: 0, now: 60, unit: 0) == .retry(after: 20))
    #expect(
      retry.verdict(.none("timed out"), attempts: 30, firstAttempt: 0, now: 60, unit: 0)
        == .retry(after: 3600))
    // Jitter only shortens, by up to half.
    #expect(
      retry.verdict(.status(503), attempts: 1, firstAttempt: 0, now: 0, unit: 0.999)
        == .retry(after: 5 * (1 - 0.5 * 0.999)))
  }

  @Test func retriesLastAtLeastADayFromTheFirstAttempt() {
    let day = 24.0 * 3600
    #expect(
      retry.verdict(.status(500), attempts: 40, firstAttempt: 0, now: day - 1, unit: 0) == .retry(after: 3600)
    )
    #expect(retry.verdict(.status(500), attempts: 41, firstAttempt: 0, now: day, unit: 0) == .givenUp)
  }

  @Test func theSignatureIsHMACSHA256OfIdTimestampAndBodyUnderEachKey() throws {
    let secrets = try WebhookSecrets(
      parsing: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw, whsec_" + Data("second".utf8).base64EncodedString())
    #expect(secrets.keys.count == 2)
    let header = secrets.signature(
      id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330, body: Array(#"{"test": 2432232314}"#.utf8)
    )
    // The Standard Webhooks specification's own example.
    #expect(header.split(separator: " ").first == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
    #expect(header.split(separator: " ").count == 2)
    #expect(secrets.masked == "whsec_**** whsec_****")
    #expect(throws: WebhookSecrets.Refusal.self) { try WebhookSecrets(parsing: "not-a-secret") }
    #expect(throws: WebhookSecrets.Refusal.self) { try WebhookSecrets(parsing: "") }
  }
}
