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
      config.webhookAddressPolicy = try! AddressPolicy(allowList: "127.0.0.1")
      config.webhookDelivery.retry.backoff = Backoff(first: .milliseconds(200), cap: .seconds(1))
      config.webhookDelivery.pollInterval = 0.2
      config.webhookDelivery.timeout = 2
      config.publicURLBase = "https://cdn.example.com/thumbs/"
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
    try sql(
      database,
      #"SELECT thumbs.enqueue($1, external_id => 'photo-1', metadata => '{"user_id": 42, "album": "x"}')"#,
      [photo])
    try sql(database, "SELECT thumbs.enqueue($1)", [fixture.origin.url("/files/gone.jpg")])
    let received = try await receiver.received(until: { $0.accepted.count >= 2 })
    #expect(received.rejected == 0, "every delivery verifies with the new key")
    #expect(received.answered["500"] == 2, "\(received.answered)")
    let events = try sql(database, "SELECT 'evt_' || id, kind, job_id FROM thumbs.events ORDER BY id").rows
    #expect(Set(received.accepted.map(\.id)) == Set(events.map { $0[0]! }))
    #expect(Set(received.accepted.map(\.type)) == ["thumbnail.succeeded", "thumbnail.failed"])
    let success = try #require(received.accepted.first { $0.type == "thumbnail.succeeded" })
    #expect(success.external_id == "photo-1")
    #expect(success.source_url?.contains("SECRET") == false && success.source_url?.contains("AKIA") == false)
    // The backend's own metadata comes back, and each thumbnail's public URL (--public-url-base).
    #expect(success.metadata == #"{"album": "x", "user_id": 42}"#)
    let keys = try sql(
      database, "SELECT storage_key FROM thumbs.variants WHERE job_id = $1::bigint ORDER BY name",
      ["\(success.job_id)"]
    ).rows.map { "https://cdn.example.com/thumbs/" + $0[0]! }
    #expect(success.urls == keys && keys.count == 4)
    let failure = try #require(received.accepted.first { $0.type == "thumbnail.failed" })
    #expect(failure.metadata == "{}" && failure.urls.isEmpty)
    let states = try sql(database, "SELECT state, count(*) FROM thumbs.webhook_deliveries GROUP BY state")
      .rows
    #expect(states == [["delivered", "2"]])
    _ = try await worker.stop()
  }

  /// The shipped schemas (docs/schemas) take every real delivery (the receiver checks each one in every
  /// test here) and refuse a body that breaks them.
  @Test func theSchemasRefuseABodyThatBreaksThem() async throws {
    let receiver = try WebhookReceiver(secrets: [Self.newSecret])
    let good = #"""
      {"type": "thumbnail.failed", "timestamp": "2026-11-24T19:34:02Z", "data": {"job_id": 2,
       "external_id": "photo-43", "source_url": "https://photos.example/missing.jpg", "profile": "default",
       "state": "failed", "error_code": "not_found", "error": "answered HTTP 404", "thumbhash": null,
       "variants": [], "attempts": 1, "rerender": false, "warnings": [], "metadata": {"user_id": 42},
       "media": null}}
      """#
    #expect(try await receiver.schemaErrors(good) == [])
    let video = good.replacingOccurrences(
      of: #""media": null"#,
      with:
        #""media": {"kind": "video", "duration_seconds": 4.2, "width": 1080, "height": 1920, "codec": "hevc", "#
        + #""container": "mov", "bit_depth": 10, "dynamic_range": "hlg"}"#)
    #expect(try await receiver.schemaErrors(video) == [])
    let noCodec = video.replacingOccurrences(of: #""codec": "hevc", "#, with: "")
    #expect(try await receiver.schemaErrors(noCodec).contains { $0.hasPrefix("data/media:") }, "\(noCodec)")
    let wrongType = good.replacingOccurrences(of: "thumbnail.failed", with: "thumbnail.done")
    #expect(try await receiver.schemaErrors(wrongType).contains { $0.hasPrefix("type:") })
    let disagreeing = good.replacingOccurrences(of: "thumbnail.failed", with: "thumbnail.succeeded")
    #expect(try await receiver.schemaErrors(disagreeing).contains { $0.hasPrefix("data/state:") })
    let noJob = good.replacingOccurrences(of: #""job_id": 2,"#, with: "")
    #expect(try await receiver.schemaErrors(noJob) == ["data: 'job_id' is a required property"])
    let noMetadata = good.replacingOccurrences(of: #", "metadata": {"user_id": 42}"#, with: "")
    #expect(try await receiver.schemaErrors(noMetadata) == ["data: 'metadata' is a required property"])
    // The guide's samples (regenerated by scripts/integration-samples.sh) follow the schemas too: the
    // webhook bodies as they are, the pretty-printed event payload as a body's data.
    let guide = try String(
      contentsOf: TestDatabase.repoRoot.appendingPathComponent("docs/integration.md"), encoding: .utf8)
    let bodies = guide.split(separator: "\n").filter { $0.hasPrefix(#"{"type":"#) }
    #expect(bodies.count >= 2)
    for body in bodies { #expect(try await receiver.schemaErrors(String(body)) == [], "\(body)") }
    let payload = try #require(guide.firstMatch(of: /```text\n(\{\n    "error"[\s\S]*?\n\})\n```/)?.1)
    let wrapped =
      #"{"type": "thumbnail.succeeded", "timestamp": "2026-11-27T08:29:55Z", "data": "#
      + payload + "}"
    #expect(try await receiver.schemaErrors(wrapped) == [])
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

  /// Worker processes with the default timings, the waits shortened only by making pending deliveries
  /// due at once (what waiting out a backoff or a dead worker's claim does). Every event arrives at
  /// least once through a time-out, a receiver down for 30 s and a worker killed while its POST was in
  /// flight; none after a 410; and the receiver, which knows only the new key, verifies every delivery
  /// while the first worker signs with the old and the new key and the second with the new one.
  @Test func everyEventArrivesThroughATimeOutADownReceiverAndAKilledWorkerAndNoneAfterA410() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    var receiver = try WebhookReceiver(secrets: [Self.newSecret])
    let (port, url) = (receiver.port, receiver.url)
    func settings(_ secrets: String) -> [String: String] {
      [
        "THUMBD_WEBHOOK_URL": url, "THUMBD_WEBHOOK_SECRET": secrets,
        "THUMBD_WEBHOOK_ALLOW_HOSTS": "127.0.0.1",
        "THUMBD_POLL_INTERVAL": "0.2",
      ]
    }
    func nudge() throws {
      try sql(
        database, "UPDATE thumbs.webhook_deliveries SET next_attempt_at = now() WHERE state = 'pending'")
    }
    func enqueue(_ n: Int) throws {
      try sql(database, "SELECT thumbs.enqueue($1)", [fixture.origin.url("/files/photo.jpg?n=\(n)")])
    }
    func events() throws -> [String] {
      try sql(database, "SELECT 'evt_' || id FROM thumbs.events ORDER BY id").rows.compactMap { $0[0] }
    }
    func delivery(_ event: String) throws -> [String?] {
      try sql(
        database,
        """
        SELECT state, attempts::text, coalesce(last_error, ''), (next_attempt_at > now() + interval '30 seconds')::text
          FROM thumbs.webhook_deliveries WHERE 'evt_' || event_id = $1
        """, [event]
      ).rows.first ?? []
    }
    var accepted = Set<String>()
    var rejected = 0
    /// Waits until the receiver accepted `event` (nudging meanwhile); records what it has seen.
    func arrived(_ event: String, timeout: Double = 30) async throws -> Bool {
      let deadline = ContinuousClock.now + .seconds(timeout)
      while ContinuousClock.now < deadline {
        let now = try await receiver.received()
        accepted.formUnion(now.accepted.map(\.id))
        rejected = max(rejected, now.rejected)
        if accepted.contains(event) { return true }
        try nudge()
        try await Task.sleep(for: .milliseconds(300))
      }
      return false
    }

    let first = try WorkerProcess(
      databaseURL: database, storage: fixture.storage,
      settings: settings("\(Self.oldSecret) \(Self.newSecret)"))
    #expect(
      try await eventually(timeout: 15) {
        try sql(database, "SELECT count(*) FROM thumbs.webhook_endpoints").rows == [["1"]]
      }, "log:\n\(first.log)")

    // A time-out: the receiver holds its answer past the sender's 10 s.
    try await receiver.answer(204, count: 1, delay: 12)
    try enqueue(1)
    #expect(try await eventually(timeout: 30) { try events().count == 1 })
    let timedOut = try events()[0]
    #expect(
      try await eventually(timeout: 20) { try delivery(timedOut)[2]?.isEmpty == false },
      "log:\n\(first.log)")
    let retried = try delivery(timedOut)
    #expect(retried.prefix(2) == ["pending", "1"], "\(retried)")
    #expect(retried[2]?.contains("Timeout was reached") == true, "\(retried)")
    #expect(try await arrived(timedOut))

    // Down for 30 s: the deliveries fail to connect, and are retried once it is back.
    let before = try await receiver.received()
    accepted.formUnion(before.accepted.map(\.id))
    receiver = try WebhookReceiver(secrets: [Self.newSecret])  // somewhere else: `port` is free now
    try enqueue(2)
    try enqueue(3)
    #expect(try await eventually(timeout: 30) { try events().count == 3 })
    let whileDown = Array(try events()[1...])
    try await Task.sleep(for: .seconds(30))
    for event in whileDown {
      let row = try delivery(event)
      #expect(row.first == "pending" && (Int(row[1] ?? "") ?? 0) >= 1, "\(row)")
    }
    receiver = try WebhookReceiver(secrets: [Self.newSecret], port: port)
    for event in whileDown { #expect(try await arrived(event)) }

    // Killed while its POST is in flight: the claim holds the delivery for a minute, then another
    // worker, signing with the new key only, sends it.
    try await receiver.answer(204, count: 1, delay: 8)
    let posts = try await receiver.received().posts
    try enqueue(4)
    #expect(try await receiver.received(until: { $0.posts > posts }).posts > posts)
    first.send(SIGKILL)
    _ = await first.waitForExit(timeout: 10)
    let inFlight = try events()[3]
    #expect(try delivery(inFlight) == ["pending", "1", "", "true"], "claimed, its worker gone")
    let second = try WorkerProcess(
      databaseURL: database, storage: fixture.storage, settings: settings(Self.newSecret))
    #expect(try await arrived(inFlight), "log:\n\(second.log)")

    // A 410 turns the endpoint off: nothing is sent after it.
    try await receiver.answer(410)
    try enqueue(5)
    #expect(try await receiver.received(until: { ($0.answered["410"] ?? 0) >= 1 }).answered["410"] == 1)
    try await receiver.answer()
    let afterStop = try await receiver.received().posts
    try enqueue(6)
    #expect(try await eventually(timeout: 30) { try events().count == 6 })
    try nudge()
    try await Task.sleep(for: .seconds(3))
    #expect(try await receiver.received().posts == afterStop, "nothing after the 410")

    let all = try events()
    #expect(Set(all.prefix(4)).isSubset(of: accepted), "\(all) vs \(accepted)")
    #expect(!accepted.contains(all[4]) && !accepted.contains(all[5]))
    let last = try await receiver.received()
    #expect(rejected == 0 && last.rejected == 0, "every delivery verified")
    second.send(SIGTERM)
    #expect(await second.waitForExit(timeout: 15) == 0, "log:\n\(second.log)")
  }
}
