import Synchronization

/// The render keys of this worker's jobs that are rendering, or have rendered and whose outcome is not
/// written yet.
///
/// Render reuse finds an earlier job's variants in the database, so it sees a job only once that job's
/// outcome is written. A duplicate leased right behind its original, whose bytes may already be here
/// (OriginalSource.prefetch), can look for the render key before then. A job whose key is here waits
/// for that outcome first, so that it takes the first job's variants instead of rendering them again.
/// The wait is bounded: reuse saves work, it is never needed for a correct result, and a long render or
/// an outcome the database is slow to take must not hold the job up.
final class RenderKeysInFlight: Sendable {
  /// Lease token → render key.
  private let keys = Mutex<[String: String]>([:])
  /// How long a job waits for another's outcome before it renders anyway.
  let patience: Duration
  /// How often a waiting job looks again. Waits are rare (a duplicate right behind its original) and
  /// short (one store and one outcome write), so polling keeps this simple.
  static let pollInterval: Duration = .milliseconds(5)

  init(patience: Duration = .seconds(2)) { self.patience = patience }

  /// The job with `token` renders the variants of `key`; its outcome will be written.
  func rendered(_ key: String, token: String) {
    keys.withLock { $0[token] = key }
  }

  /// The job's outcome is written (or will not be: abandoned, failed).
  func ended(token: String) {
    keys.withLock { _ = $0.removeValue(forKey: token) }
  }

  func contains(_ key: String) -> Bool {
    keys.withLock { $0.values.contains(key) }
  }

  /// Returns once no job here holds `key`, or after `patience`. True when it had to wait.
  @discardableResult
  func settled(_ key: String) async -> Bool {
    guard contains(key) else { return false }
    let deadline = ContinuousClock.now + patience
    while contains(key), ContinuousClock.now < deadline, !Task.isCancelled {
      try? await Task.sleep(for: Self.pollInterval)
    }
    return true
  }
}
