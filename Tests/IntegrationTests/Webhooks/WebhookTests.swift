import Foundation
import Queue
import TestSupport
import Testing
import ThumbCore
import Worker

/// Webhooks delivered by real workers to a loopback receiver that verifies every signature with the
/// Standard Webhooks reference library.
@Suite(.serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)))
struct WebhookTests {
  /// Two keys, base64: the worker signs with both (a rotation in progress).
  static let oldSecret = "whsec_" + Data("old-key-old-key-old-key-0123456789".utf8).base64EncodedString()
  static let newSecret = "whsec_" + Data("new-key-new-key-new-key-0123456789".utf8).base64EncodedString()

  func worker(
    _ database: String, _ fixture: QueueFixture, to receiver: WebhookReceiver, secrets: String
  )
    throws -> BackgroundWorker
  {
    try BackgroundWorker(databaseURL: database, storage: fixture.storage) { config in
      config.webhookURL = receiver.url
      config.webhookSecrets = try? WebhookSecrets(parsing: secrets)
      config.webhookAddressGuard = try! AddressGuard(allowList: "127.0.0.1")
      config.webhookDelivery.retry.backoff = Backoff(first: .milliseconds(200), cap: .seconds(1))
      config.webhookDelivery.pollInterval = 0.2
      config.webhookDelivery.timeout = 2
    }
  }

  @Test func everyEventIsDeliveredSignedThroughFailuresAndARotation() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    // The receiver knows only the new key; the worker signs with the old and the new one.
    let receiver = try WebhookReceiver(secrets: [Self.newSecret])
    try await receiver.answer(500, count: 2)
    let worker = try worker(database, fixture, to: receiver, secrets: "\(Self.oldSecret) \(Self.newSecret)")
    defer { Task { _ = try? await worker.stop() } }
    // Registered before the jobs: the endpoint starts after the newest event.
    try await Task.sleep(for: .milliseconds(500))
    let photo = fixture.origin.url("/files/photo.jpg?X-Amz-Signature=SECRET&X-Amz-Credential=AKIA")
    try sql(database, "SELECT thumbs.enqueue($1, external_id => 'photo-1')", [photo])
    try sql(database, "SELECT thumbs.enqueue($1)", [fixture.origin.url("/files/gone.jpg")])
    let received = try await receiver.received(until: { $0.accepted.count >= 2 })
    #expect(received.rejected == 0, "every delivery verifies with the new key")
    #expect(received.answered["500"] == 2, "\(received.answered)")
    let events = try sql(database, "SELECT 'evt_' || id, kind, job_id FROM thumbs.events ORDER BY id").rows
    #expect(Set(received.accepted.map(\.id)) == Set(events.map { $0[0]! }))
    #expect(Set(received.accepted.map(\.type)) == ["thumbnail.succeeded", "thumbnail.failed"])
    let success = try #require(received.accepted.first { $0.type == "thumbnail.succeeded" })
    #expect(success.external_id == "photo-1")
    #expect(!success.source_url.contains("SECRET") && !success.source_url.contains("AKIA"))
    let states = try sql(database, "SELECT state, count(*) FROM thumbs.webhook_deliveries GROUP BY state")
      .rows
    #expect(states == [["delivered", "2"]])
    _ = try await worker.stop()
  }

  @Test func a410StopsTheEndpointUntilItIsEnabledAndReplayed() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    let receiver = try WebhookReceiver(secrets: [Self.newSecret])
    try await receiver.answer(410)
    let worker = try worker(database, fixture, to: receiver, secrets: Self.newSecret)
    defer { Task { _ = try? await worker.stop() } }
    try await Task.sleep(for: .milliseconds(500))
    try sql(database, "SELECT thumbs.enqueue($1)", [fixture.origin.url("/files/photo.jpg?1")])
    let first = try await receiver.received(until: { $0.answered["410"] ?? 0 >= 1 })
    #expect(first.answered["410"] == 1)
    try await receiver.answer()
    // While it is off, a new event is not sent.
    try sql(database, "SELECT thumbs.enqueue($1)", [fixture.origin.url("/files/photo.jpg?2")])
    try await Task.sleep(for: .seconds(2))
    let off = try await receiver.received()
    #expect(off.posts == 1 && off.accepted.isEmpty, "\(off)")
    #expect(
      try sql(database, "SELECT disabled_reason FROM thumbs.webhook_endpoints").rows == [
        ["answered HTTP 410"]
      ])
    // Enabled again and replayed: both events arrive.
    #expect(try sql(database, "SELECT thumbs.enable_webhook($1)", [receiver.url]).rows == [["t"]])
    #expect(
      try sql(database, "SELECT thumbs.replay_webhooks(now() - interval '1 hour')").rows == [["2"]])
    let replayed = try await receiver.received(until: { $0.accepted.count >= 2 })
    #expect(replayed.accepted.count == 2, "\(replayed)")
    _ = try await worker.stop()
  }
}
