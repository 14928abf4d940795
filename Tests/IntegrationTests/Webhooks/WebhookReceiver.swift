import Foundation
import TestSupport
import Testing
import Transport

/// Tests/Support/webhook-receiver.py on a free loopback port: verifies each delivery with the Standard
/// Webhooks reference library (the test virtualenv's `standardwebhooks`) against its own secrets, and
/// answers as told; and validates each one against the JSON Schemas the project ships (docs/schemas):
/// `received()` records an issue for every delivery that breaks them.
final class WebhookReceiver: @unchecked Sendable {
  let helper: HelperProcess
  let port: Int
  private let multi = CurlMulti()

  /// `port` 0: a free one; another port: that one (a receiver coming back where it was).
  init(secrets: [String], port: Int = 0) throws {
    let script = TestDatabase.repoRoot.appendingPathComponent("Tests/Support/webhook-receiver.py").path
    let schemas = TestDatabase.repoRoot.appendingPathComponent("docs/schemas").path
    helper = try HelperProcess(
      testVirtualenv + "/bin/python",
      [script, "--port", "\(port)", "--schemas", schemas] + secrets.flatMap { ["--secret", $0] })
    self.port = try helper.announcedPort()
  }

  var url: String { "http://127.0.0.1:\(port)/hook" }

  /// The next `count` deliveries (nil: all) are answered `status` after `delay` seconds; no status:
  /// 204 at once.
  func answer(_ status: Int? = nil, count: Int? = nil, delay: Double = 0) async throws {
    var query: [String] = []
    if let status { query += ["status=\(status)", "delay=\(delay)"] }
    if let count { query.append("count=\(count)") }
    let response = try await multi.send(
      HTTPRequest(method: .post, url: "http://127.0.0.1:\(port)/_mode?" + query.joined(separator: "&"))
    ).get()
    #expect(response.status == 204)
  }

  struct Received: Decodable {
    struct Delivery: Decodable, Equatable {
      var id: String
      var type: String
      var job_id: Int64
      var external_id: String?
      var source_url: String?
      /// The body's data.metadata, as JSON with sorted keys.
      var metadata: String
      /// Each variant's `url`, if it has one.
      var urls: [String?]
    }
    struct Invalid: Decodable, Equatable {
      var id: String?
      var errors: [String]
    }
    var accepted: [Delivery]
    var rejected: Int
    var posts: Int
    var answered: [String: Int]
    var invalid: [Invalid]
  }

  func received() async throws -> Received {
    let response = try await multi.send(HTTPRequest(method: .get, url: "http://127.0.0.1:\(port)/_received"))
      .get()
    let received = try JSONDecoder().decode(Received.self, from: Data(response.body))
    #expect(received.invalid.isEmpty, "deliveries that break docs/schemas: \(received.invalid)")
    return received
  }

  /// What the shipped schemas find wrong with a webhook body; empty when it is valid.
  func schemaErrors(_ body: String) async throws -> [String] {
    let response = try await multi.send(
      HTTPRequest(method: .post, url: "http://127.0.0.1:\(port)/_validate", body: Array(body.utf8))
    ).get()
    struct Answer: Decodable { var errors: [String] }
    return try JSONDecoder().decode(Answer.self, from: Data(response.body)).errors
  }

  /// What was received once `done` holds, or after `timeout` seconds.
  func received(until done: (Received) -> Bool, timeout: Double = 30) async throws -> Received {
    let deadline = ContinuousClock.now + .seconds(timeout)
    while true {
      let now = try await received()
      if done(now) || ContinuousClock.now > deadline { return now }
      try await Task.sleep(for: .milliseconds(100))
    }
  }

  deinit {
    let multi = multi
    Task { await multi.shutdown() }
  }
}
