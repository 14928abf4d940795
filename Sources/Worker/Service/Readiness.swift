import Logging
import Queue
import Synchronization

/// What `/healthz` and `/readyz` answer from, fed by the services as things happen.
///
/// Ready: the worker reached the database at start, its last statement (of any service) answered, and
/// it is not shutting down. Live: the keeper's loop has gone round recently (it wakes every few seconds
/// whatever the database does, so a silent keeper means a stuck process, not a database outage).
final class Readiness: Sendable {
  private struct State {
    var started = false
    /// False while the storage's start-up check (StorageCheck) has not passed.
    var storageChecked = true
    var databaseAnswers = false
    var stopping = false
    /// False while the HTTP endpoint is configured but not yet listening.
    var endpointListening = true
    var lastKeeperRound: ContinuousClock.Instant = .now
    /// When the database stopped answering a worker that it had answered; nil while it answers.
    var lostAt: ContinuousClock.Instant?
  }

  private let state = Mutex(State())
  private let startedSignal = OneShot<Bool>()
  /// How long the keeper may be silent before the worker counts as stuck.
  let livenessWindow: Duration

  /// Says once when the database is lost and once when it is back.
  private let logger: Logger?

  init(livenessWindow: Duration, logger: Logger? = nil) {
    self.livenessWindow = livenessWindow
    self.logger = logger
  }

  var isReady: Bool {
    state.withLock { $0.started && $0.storageChecked && $0.databaseAnswers && !$0.stopping }
  }
  var isLive: Bool { state.withLock { $0.lastKeeperRound.duration(to: .now) < livenessWindow } }
  var databaseAnswers: Bool { state.withLock { $0.databaseAnswers } }

  func databaseAnswered() {
    let lostAt = state.withLock { state -> ContinuousClock.Instant? in
      defer { (state.databaseAnswers, state.lostAt) = (true, nil) }
      return state.lostAt
    }
    if let lostAt {
      logger?.warning(
        "database answers again; ready",
        metadata: ["unreachable_seconds": "\(lostAt.duration(to: .now).inSeconds)"])
    }
  }

  func databaseFailed(reason: String) {
    let lost = state.withLock { state -> Bool in
      defer { state.databaseAnswers = false }
      guard state.started, state.databaseAnswers, state.lostAt == nil else { return false }
      state.lostAt = .now
      return true
    }
    if lost {
      logger?.error(
        "database connection lost; not ready, reconnecting",
        metadata: ["error": "\(reason.trimmingCharacters(in: .whitespacesAndNewlines))"])
    }
  }
  func keeperRound() { state.withLock { $0.lastKeeperRound = .now } }
  func stopping() { state.withLock { $0.stopping = true } }

  /// The endpoint will listen: the worker announces itself only once it does, so a taken port ends the
  /// worker before it has touched the database.
  func expectEndpoint() { state.withLock { $0.endpointListening = false } }
  func endpointListening() { state.withLock { $0.endpointListening = true } }
  var isEndpointListening: Bool { state.withLock { $0.endpointListening } }

  /// The storage will be checked: the producer leases only once it can write there.
  func expectStorageCheck() { state.withLock { $0.storageChecked = false } }

  /// The storage took a write.
  func storageCheckPassed() {
    if state.withLock({
      $0.storageChecked = true; return $0.started
    }) {
      startedSignal.resolve(true)
    }
  }

  /// The worker reached the database and announced itself: once the storage is checked too, the
  /// producer may lease.
  func started() {
    if state.withLock({
      $0.started = true; return $0.storageChecked
    }) {
      startedSignal.resolve(true)
    }
  }

  /// The start-up was given up (a stop came first).
  func abandoned() { startedSignal.resolve(false) }

  /// True once started (database and storage); false when the start-up was abandoned.
  func waitUntilStarted() async -> Bool { await startedSignal.value }

  /// Runs one database call and records whether the database answered. A query error (a constraint,
  /// a bad statement) is an answer; only a lost or refused connection means the database is away.
  func observe<T>(_ body: () async throws(PostgresError) -> T) async throws(PostgresError) -> T {
    do {
      let value = try await body()
      databaseAnswered()
      return value
    } catch {
      if error.kind == .connection { databaseFailed(reason: error.message) } else { databaseAnswered() }
      throw error
    }
  }
}
