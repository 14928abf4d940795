import Foundation
import Hashing
import Logging
import Metrics
import Queue
import ServiceLifecycleTestKit
import Synchronization
import Testing
import ThumbCore
import Transport

@testable import Worker

/// The webhook sender, with statements and a receiver of the test's own: no database, no HTTP server.
@Suite struct WebhookSenderTests {
  typealias Fakes = ServiceFakes

  static let url = "https://hooks.test/thumbd"
  /// The sender's clock stands still here.
  static let now: Double = 1_700_000_000

  /// The webhook statements, answering in turn from the lists the test gives (then: nothing new,
  /// nothing due), and keeping what they were asked, in order.
  final class Statements: WebhookStatements {
    struct State {
      /// Events passed by each dispatch.
      var dispatches: [Int] = []
      /// Deliveries each lease claims.
      var due: [[WebhookDelivery]] = []
      /// The first this many leases fail.
      var leaseFailures = 0

      var calls: [String] = []
      var leasedWith: [(url: String, limit: Int, leaseSeconds: Double, at: ContinuousClock.Instant)] = []
      var finished: [[WebhookDeliveryOutcome]] = []
    }

    let state: Mutex<State>

    init(_ change: (inout State) -> Void = { _ in }) {
      var state = State()
      change(&state)
      self.state = Mutex(state)
    }

    var calls: [String] { state.withLock { $0.calls } }
    var finished: [WebhookDeliveryOutcome] { state.withLock { $0.finished.flatMap { $0 } } }

    func registerWebhook(url: String) async throws(PostgresError) -> Bool {
      state.withLock { $0.calls.append("register") }
      return false
    }

    func dispatchWebhookEvents(
      url: String, maxEvents: Int
    ) async throws(PostgresError) -> (
      passed: Int, queued: Int
    ) {
      state.withLock { state in
        state.calls.append("dispatch")
        let passed = state.dispatches.isEmpty ? 0 : state.dispatches.removeFirst()
        return (passed, passed)
      }
    }

    func leaseWebhookDeliveries(
      url: String, limit: Int, leaseSeconds: Double
    ) async throws(PostgresError) -> [WebhookDelivery] {
      let failed = state.withLock { state in
        state.calls.append("lease")
        state.leasedWith.append((url, limit, leaseSeconds, .now))
        if state.leaseFailures > 0 {
          state.leaseFailures -= 1
          return true
        }
        return false
      }
      if failed { throw PostgresError(kind: .connection, message: "server closed the connection") }
      return state.withLock { $0.due.isEmpty ? [] : $0.due.removeFirst() }
    }

    func finishWebhookDeliveries(_ outcomes: [WebhookDeliveryOutcome]) async throws(PostgresError) -> [Int64]
    {
      state.withLock {
        $0.calls.append("finish")
        $0.finished.append(outcomes)
      }
      return outcomes.map(\.id)
    }
  }

  /// A receiver answering in turn from `answers` (then 204), keeping every request.
  final class Poster: WebhookPoster {
    let answers: Mutex<[WebhookRetry.Answer]>
    let requests = Mutex<[HTTPRequest]>([])

    init(_ answers: [WebhookRetry.Answer] = []) { self.answers = Mutex(answers) }

    func post(_ request: HTTPRequest) async -> WebhookRetry.Answer {
      requests.withLock { $0.append(request) }
      return answers.withLock { $0.isEmpty ? .status(204) : $0.removeFirst() }
    }
  }

  static func delivery(
    _ id: Int64, attempts: Int = 1, firstAttempt: Double = now, eventID: Int64 = 100,
    kind: String = "succeeded",
    created: Double = now - 3, payload: String = #"{"job":1}"#
  ) -> WebhookDelivery {
    WebhookDelivery(
      id: id, token: "token\(id)", attempts: attempts, firstAttemptEpoch: firstAttempt, eventID: eventID,
      kind: kind, createdEpoch: created, payload: payload)
  }

  static func secrets(_ text: String = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw") -> WebhookSecrets {
    try! WebhookSecrets(parsing: text)
  }

  func sender(
    _ statements: Statements, _ poster: Poster, settings: WebhookDeliverySettings = WebhookDeliverySettings(),
    secrets: WebhookSecrets = secrets(), backoff: Backoff = WebhookSender.roundBackoff, unit: Double = 0
  ) -> WebhookSender {
    WebhookSender(
      queue: statements, url: Self.url, secrets: secrets, permitsAddress: { $0 == "203.0.113.5" },
      settings: settings, poster: poster, wake: WakeSignal(),
      metrics: WorkerMetrics(factory: NOOPMetricsHandler.instance),
      logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() },
      activity: ServiceActivity().reporter(for: "webhooks"), backoff: backoff, now: { Self.now },
      unit: { unit })
  }

  /// Runs `sender` while `body` runs, then stops it as its group would.
  func run(_ sender: WebhookSender, _ body: () async -> Void) async {
    await testGracefulShutdown { trigger in
      let run = Task { try? await sender.run() }
      await body()
      trigger.triggerGracefulShutdown()
      await run.value
    }
  }

  /// What the sender wrote back for `delivery` when the receiver answered `answer`.
  func outcome(
    of delivery: WebhookDelivery, answered answer: WebhookRetry.Answer, unit: Double = 0
  ) async -> WebhookDeliveryOutcome? {
    let statements = Statements { $0.due = [[delivery]] }
    await run(sender(statements, Poster([answer]), unit: unit)) {
      #expect(await Fakes.eventually { !statements.finished.isEmpty })
    }
    return statements.finished.first
  }

  @Test func aDeliveryAnswered2xxIsFinishedAsDeliveredUnderItsClaim() async {
    let outcome = await outcome(of: Self.delivery(7, attempts: 3), answered: .status(204))
    #expect(outcome == WebhookDeliveryOutcome(id: 7, token: "token7", result: .delivered, status: 204))
  }

  @Test func a2xxCountsEvenAfterTheRetryWindow() async {
    let late = Self.delivery(7, attempts: 20, firstAttempt: Self.now - 2 * 24 * 3600)
    #expect(await outcome(of: late, answered: .status(200))?.result == .delivered)
  }

  @Test func aServerErrorIsRetriedAfterTheDeliveryBackoff() async {
    // The third attempt failed: 5 s doubled twice, then shorter by half the jitter's reach (unit 0.5).
    let outcome = await outcome(of: Self.delivery(7, attempts: 3), answered: .status(503), unit: 0.5)
    #expect(
      outcome
        == WebhookDeliveryOutcome(
          id: 7, token: "token7", result: .retry, status: 503, retryIn: 15, error: "answered HTTP 503"))
    #expect(WebhookRetry().backoff.seconds(afterFailures: 3, unit: 0.5) == 15)
  }

  @Test func noAnswerIsRetriedWithTheTransportsReason() async {
    let outcome = await outcome(of: Self.delivery(7), answered: .none("connection refused"))
    #expect(
      outcome
        == WebhookDeliveryOutcome(
          id: 7, token: "token7", result: .retry, status: nil, retryIn: 5, error: "connection refused"))
  }

  @Test func aClientErrorOtherThanGoneIsRetried() async {
    let outcome = await outcome(of: Self.delivery(7), answered: .status(404))
    #expect(outcome?.result == .retry && outcome?.retryIn == 5, "\(String(describing: outcome))")
  }

  @Test func goneStopsTheDeliveries() async {
    let outcome = await outcome(of: Self.delivery(7, attempts: 2), answered: .status(410))
    #expect(
      outcome
        == WebhookDeliveryOutcome(
          id: 7, token: "token7", result: .stopped, status: 410, error: "answered HTTP 410"))
  }

  @Test func failuresPastTheRetryWindowAreGivenUp() async {
    let old = Self.delivery(7, attempts: 12, firstAttempt: Self.now - WebhookRetry().retryFor)
    let outcome = await outcome(of: old, answered: .status(500))
    #expect(
      outcome
        == WebhookDeliveryOutcome(
          id: 7, token: "token7", result: .givenUp, status: 500, error: "answered HTTP 500"))
  }

  @Test func thePostIsSignedAsStandardWebhooksAsksUnderEverySecret() async throws {
    let statements = Statements { $0.due = [[Self.delivery(7, eventID: 42, kind: "failed")]] }
    let poster = Poster()
    let secrets = Self.secrets("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw whsec_c2Vjb25kIGtleQ==")
    var settings = WebhookDeliverySettings()
    settings.timeout = 7
    await run(sender(statements, poster, settings: settings, secrets: secrets)) {
      #expect(await Fakes.eventually { !statements.finished.isEmpty })
    }
    let request = try #require(poster.requests.withLock { $0 }.first)
    #expect(request.method == .post && request.url == Self.url && request.timeout == 7)
    let body = #"{"type":"thumbnail.failed","timestamp":"2023-11-14T22:13:17Z","data":{"job":1}}"#
    #expect(String(decoding: request.body, as: UTF8.self) == body)
    // Each key signs "id.timestamp.body"; the header lists one "v1," signature per key.
    let signed = Array("evt_42.1700000000.".utf8) + Array(body.utf8)
    let signatures = secrets.keys.map {
      "v1," + Data(Digest.hmacSHA256(key: $0, message: signed)).base64EncodedString()
    }
    #expect(
      request.headers == [
        "Content-Type: application/json", "webhook-id: evt_42", "webhook-timestamp: 1700000000",
        "webhook-signature: \(signatures.joined(separator: " "))",
      ])
    // The address check is the sender's own.
    #expect(request.permitsAddress?("203.0.113.5") == true && request.permitsAddress?("10.0.0.1") == false)
  }

  @Test func aSignatureMatchesTheStandardWebhooksExample() {
    let payload = Array(#"{"test": 2432232314}"#.utf8)
    #expect(
      Self.secrets().signature(id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330, body: payload)
        == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
  }

  @Test func everyDeliveryOfAClaimIsSentAndFinishedInOneStatement() async {
    let statements = Statements { $0.due = [[Self.delivery(1), Self.delivery(2), Self.delivery(3)]] }
    let poster = Poster([.status(200), .status(503), .status(410)])
    await run(sender(statements, poster)) {
      #expect(await Fakes.eventually { !statements.finished.isEmpty })
    }
    let batches = statements.state.withLock { $0.finished }
    #expect(batches.count == 1 && Set(batches.first?.map(\.id) ?? []) == [1, 2, 3], "\(batches)")
    #expect(poster.requests.withLock { $0.count } == 3)
  }

  @Test func newEventsAreDispatchedWhileADispatchComesBackFullThenDueDeliveriesClaimed() async {
    var settings = WebhookDeliverySettings()
    settings.batch = 4
    settings.leaseSeconds = 45
    let statements = Statements { $0.dispatches = [500, 500, 12] }
    await run(sender(statements, Poster(), settings: settings)) {
      #expect(await Fakes.eventually { statements.calls.contains("lease") })
    }
    #expect(Array(statements.calls.prefix(5)) == ["register", "dispatch", "dispatch", "dispatch", "lease"])
    let leased = statements.state.withLock { $0.leasedWith.first }
    #expect(leased?.url == Self.url && leased?.limit == 4 && leased?.leaseSeconds == 45)
  }

  @Test func aFailedRoundIsTriedAgainAfterTheBackoffWithoutRegisteringAgain() async {
    let statements = Statements {
      $0.leaseFailures = 2
      $0.due = [[Self.delivery(7)]]
    }
    let backoff = Backoff(first: .milliseconds(200), cap: nil)
    await run(sender(statements, Poster(), backoff: backoff)) {
      #expect(await Fakes.eventually { !statements.finished.isEmpty })
    }
    let times = statements.state.withLock { $0.leasedWith.map(\.at) }
    #expect(times.count >= 3)
    if times.count >= 3 {
      // Waits of 0.2 s, then 0.4 s.
      #expect(times[0].duration(to: times[1]) >= .milliseconds(200))
      #expect(times[1].duration(to: times[2]) >= .milliseconds(400))
    }
    #expect(statements.calls.filter { $0 == "register" }.count == 1)
    #expect(statements.finished.first?.result == .delivered)
  }

  /// How long `sender` takes to end once stopped, after `started` holds.
  func stopTime(_ sender: WebhookSender, once started: @escaping () -> Bool) async -> Duration {
    await testGracefulShutdown { trigger in
      let run = Task { try? await sender.run() }
      #expect(await Fakes.eventually(started))
      let stopped = ContinuousClock.now
      trigger.triggerGracefulShutdown()
      await run.value
      return stopped.duration(to: .now)
    }
  }

  @Test func aStopEndsTheSenderWaitingForEvents() async {
    var settings = WebhookDeliverySettings()
    settings.pollInterval = 10
    let statements = Statements()
    let took = await stopTime(sender(statements, Poster(), settings: settings)) {
      statements.calls.contains("lease")
    }
    #expect(took < .seconds(5))
    #expect(statements.calls.filter { $0 == "lease" }.count == 1)
  }

  @Test func aStopEndsTheSenderWaitingAfterAFailedRound() async {
    let statements = Statements { $0.leaseFailures = 100 }
    let took = await stopTime(sender(statements, Poster(), backoff: Backoff(first: .seconds(10), cap: nil))) {
      statements.calls.contains("lease")
    }
    #expect(took < .seconds(5))
    #expect(statements.calls.filter { $0 == "lease" }.count == 1)
  }
}
