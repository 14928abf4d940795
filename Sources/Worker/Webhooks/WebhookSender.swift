import Foundation
import Logging
import Queue
import ServiceLifecycle
import ThumbCore
import Transport

/// How deliveries are claimed, sent and retried.
public struct WebhookDeliverySettings: Sendable {
  /// Deliveries claimed (and sent at once) per round.
  public var batch = 16
  /// A claim lasts this long: a delivery whose worker died is due again then.
  public var leaseSeconds: Double = 60
  /// One POST, connection included.
  public var timeout: Double = 10
  /// Looks for due deliveries at least this often (an event's NOTIFY wakes it sooner).
  public var pollInterval: Double = 1
  public var retry = WebhookRetry()

  public init() {}
}

/// The statements a WebhookSender runs: the queue's (`JobQueue`), or a test's own.
protocol WebhookStatements: Sendable {
  func registerWebhook(url: String) async throws(PostgresError) -> Bool
  func dispatchWebhookEvents(
    url: String, maxEvents: Int
  ) async throws(PostgresError) -> (passed: Int, queued: Int)
  func leaseWebhookDeliveries(
    url: String, limit: Int, leaseSeconds: Double
  ) async throws(PostgresError) -> [WebhookDelivery]
  @discardableResult
  func finishWebhookDeliveries(_ outcomes: [WebhookDeliveryOutcome]) async throws(PostgresError) -> [Int64]
}

extension JobQueue: WebhookStatements {}

/// Where a WebhookSender's POSTs go: the transfer thread (`CurlMulti`), or a test's own receiver.
protocol WebhookPoster: Sendable {
  /// What the receiver answered to `request`, or why no answer came.
  func post(_ request: HTTPRequest) async -> WebhookRetry.Answer
}

extension CurlMulti: WebhookPoster {
  func post(_ request: HTTPRequest) async -> WebhookRetry.Answer {
    switch await send(request) {
    case .success(let response): .status(response.status)
    case .failure(let error): .none(error.description)
    }
  }
}

/// Delivers completion events to the webhook URL: registers the endpoint, moves its cursor over new
/// events (queueing one delivery each), claims due deliveries, POSTs them signed, and writes back what
/// became of each. Every worker with the URL runs one; the database decides who sends what.
struct WebhookSender: Service {
  let queue: any WebhookStatements
  let url: String
  let secrets: WebhookSecrets
  /// The private-network block for the URL's host (`AddressPolicy.policy`).
  let permitsAddress: @Sendable (String) -> Bool
  let settings: WebhookDeliverySettings
  let poster: any WebhookPoster
  let wake: WakeSignal
  let metrics: WorkerMetrics
  let logger: Logger
  let activity: ServiceActivity.Reporter
  /// Between failed rounds (`roundBackoff` unless a test says otherwise).
  var backoff: Backoff = WebhookSender.roundBackoff
  /// Seconds since 1970, for the signature's timestamp and the retry window; a test's own clock.
  var now: @Sendable () -> Double = { Date().timeIntervalSince1970 }
  /// A random number in [0, 1) for the retry's jitter; a test's own to know the wait.
  var unit: @Sendable () -> Double = { Double.random(in: 0..<1) }

  /// A round fails when the database is away: tried again soon, then less often.
  static let roundBackoff = Backoff(first: .seconds(1), cap: .seconds(30))

  func run() async throws {
    let ending = OneShot<Void>()
    await withGracefulShutdownHandler {
      var failures = 0
      var registered = false
      while !ending.isResolved {
        do {
          if !registered {
            activity.awaiting("the webhook endpoint's registration")
            if try await queue.registerWebhook(url: url) {
              logger.warning(
                "the webhook endpoint answered 410 Gone and is off: nothing is sent until thumbs.enable_webhook",
                metadata: ["url": "\(SourceURL.redacted(url))"])
            }
            registered = true
          }
          let sent = try await round()
          failures = 0
          if sent < settings.batch {
            activity.awaiting("new events or due deliveries")
            await wake.wait(timeout: settings.pollInterval)
          }
        } catch {
          failures += 1
          let delay = backoff.seconds(afterFailures: failures)
          logger.warning("webhook round failed", metadata: ["error": "\(error)", "retry_in": "\(delay)"])
          await wake.wait(timeout: delay)
        }
      }
    } onGracefulShutdown: {
      ending.resolve(())
      wake.signal()
    }
  }

  /// Events one dispatch statement queues deliveries for (it runs again while it finds that many).
  private static let eventsPerDispatch = 500

  /// Queues deliveries for new events, then sends what is due; returns how many it sent.
  private func round() async throws(PostgresError) -> Int {
    activity.awaiting("the webhook cursor")
    while try await queue.dispatchWebhookEvents(url: url, maxEvents: Self.eventsPerDispatch).passed
      == Self.eventsPerDispatch
    {}
    activity.awaiting("due webhook deliveries")
    let due = try await queue.leaseWebhookDeliveries(
      url: url, limit: settings.batch, leaseSeconds: settings.leaseSeconds)
    guard !due.isEmpty else { return 0 }
    activity.awaiting("\(due.count) webhook POSTs")
    let outcomes = await withTaskGroup(of: WebhookDeliveryOutcome.self) { group in
      for delivery in due { group.addTask { await send(delivery) } }
      var outcomes: [WebhookDeliveryOutcome] = []
      for await outcome in group { outcomes.append(outcome) }
      return outcomes
    }
    try await queue.finishWebhookDeliveries(outcomes)
    return due.count
  }

  /// One signed POST and what it comes to.
  private func send(_ delivery: WebhookDelivery) async -> WebhookDeliveryOutcome {
    let id = "evt_\(delivery.eventID)"
    let body = Array(
      #"{"type":"thumbnail.\#(delivery.kind)","timestamp":"\#(Self.iso8601(delivery.createdEpoch))","data":\#(delivery.payload)}"#
        .utf8)
    let timestamp = Int(now())
    var request = HTTPRequest(
      method: .post, url: url,
      headers: [
        "Content-Type: application/json", "webhook-id: \(id)", "webhook-timestamp: \(timestamp)",
        "webhook-signature: \(secrets.signature(id: id, timestamp: timestamp, body: body))",
      ], body: body)
    request.timeout = settings.timeout
    request.connectTimeout = min(5, settings.timeout)
    request.maxResponseBytes = 4096
    request.userAgent = "thumbd/\(ThumbdVersion.current) (webhooks)"
    request.permitsAddress = permitsAddress
    let answer = await poster.post(request)
    let verdict = settings.retry.verdict(
      answer, attempts: delivery.attempts, firstAttempt: delivery.firstAttemptEpoch,
      now: now(), unit: unit())
    let status: Int? = if case .status(let code) = answer { code } else { nil }
    let problem: String? =
      switch answer {
      case .status(let code) where (200..<300).contains(code): nil
      case .status(let code): "answered HTTP \(code)"
      case .none(let reason): reason
      }
    switch verdict {
    case .delivered:
      metrics.webhook(.delivered, latency: now() - delivery.createdEpoch)
      return .init(id: delivery.id, token: delivery.token, result: .delivered, status: status)
    case .retry(let after):
      metrics.webhook(.retry)
      return .init(
        id: delivery.id, token: delivery.token, result: .retry, status: status, retryIn: after, error: problem
      )
    case .givenUp:
      metrics.webhook(.givenUp)
      logger.error(
        "webhook delivery given up after retrying for its whole window",
        metadata: [
          "event": "\(delivery.eventID)", "attempts": "\(delivery.attempts)", "error": "\(problem ?? "")",
        ])
      return .init(id: delivery.id, token: delivery.token, result: .givenUp, status: status, error: problem)
    case .stopped:
      metrics.webhook(.stopped)
      logger.warning(
        "the webhook endpoint answered 410 Gone: deliveries to it stop until thumbs.enable_webhook",
        metadata: ["url": "\(SourceURL.redacted(url))"])
      return .init(id: delivery.id, token: delivery.token, result: .stopped, status: status, error: problem)
    }
  }

  private static func iso8601(_ epoch: Double) -> String {
    Date(timeIntervalSince1970: epoch).formatted(.iso8601)
  }
}
