/// A delivery claimed for one POST (migrations/0011).
public typealias WebhookDelivery = SQL.LeaseWebhookDeliveries.Row

/// What became of one claimed delivery, written back with its claim's token.
public struct WebhookDeliveryOutcome: Sendable, Equatable {
  public enum Result: String, Sendable {
    case delivered, retry, givenUp = "given_up", stopped
  }

  public var id: Int64
  public var token: String
  public var result: Result
  /// The HTTP status, nil when no answer came.
  public var status: Int?
  /// For `retry`: seconds until the next attempt.
  public var retryIn: Double?
  public var error: String?

  public init(
    id: Int64, token: String, result: Result, status: Int?, retryIn: Double? = nil, error: String? = nil
  ) {
    self.id = id
    self.token = token
    self.result = result
    self.status = status
    self.retryIn = retryIn
    self.error = error
  }
}

extension JobQueue {
  /// Records `url` as a webhook endpoint (a new one starts after the newest event); returns whether
  /// it is off (it answered 410 and was not enabled again).
  public func registerWebhook(url: String) async throws(PostgresError) -> Bool {
    try await client.run(SQL.RegisterWebhook.self, .init(url: url)).first?.disabled ?? false
  }

  /// Queues deliveries to `url` for up to `maxEvents` events after its cursor. Returns how many events
  /// it passed (0: none new, or another worker holds the endpoint) and how many deliveries it queued.
  public func dispatchWebhookEvents(
    url: String, maxEvents: Int
  ) async throws(PostgresError) -> (
    passed: Int, queued: Int
  ) {
    let row = try await client.run(SQL.DispatchWebhookEvents.self, .init(url: url, maxEvents: maxEvents))
      .first
    return (row?.passed ?? 0, row?.queued ?? 0)
  }

  /// Claims up to `limit` due deliveries to `url` for `leaseSeconds`.
  public func leaseWebhookDeliveries(
    url: String, limit: Int, leaseSeconds: Double
  ) async throws(PostgresError)
    -> [WebhookDelivery]
  {
    try await client.run(
      SQL.LeaseWebhookDeliveries.self, .init(url: url, limit: limit, leaseSeconds: leaseSeconds))
  }

  /// Writes what became of claimed deliveries; returns the ids written (a claim that ran out and was
  /// taken by another worker is not).
  @discardableResult
  public func finishWebhookDeliveries(
    _ outcomes: [WebhookDeliveryOutcome]
  ) async throws(PostgresError)
    -> [Int64]
  {
    guard !outcomes.isEmpty else { return [] }
    return try await client.run(
      SQL.FinishWebhookDeliveries.self,
      .init(
        ids: outcomes.map(\.id), tokens: outcomes.map(\.token), outcomes: outcomes.map(\.result.rawValue),
        statuses: outcomes.map(\.status), retryIn: outcomes.map(\.retryIn), errors: outcomes.map(\.error))
    ).map(\.id)
  }
}
