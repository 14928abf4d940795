import Synchronization

/// The logged-in browsers: a random session id (the cookie) to its CSRF token, kept in memory. A
/// console restart logs everyone out, which is what an operator expects of a restart.
public final class Sessions: Sendable {
  public struct Session: Sendable, Equatable {
    public let id: String
    /// Every form's hidden `csrf` field; a POST whose field differs is refused.
    public let csrf: String
    var lastSeen: ContinuousClock.Instant
  }

  /// A session unused this long is gone.
  public let idle: Duration
  private let sessions = Mutex<[String: Session]>([:])

  public init(idle: Duration = .seconds(12 * 3600)) { self.idle = idle }

  public func open(now: ContinuousClock.Instant = .now) -> Session {
    let session = Session(id: Secrets.token(), csrf: Secrets.token(), lastSeen: now)
    sessions.withLock { all in
      all = all.filter { now - $0.value.lastSeen < idle }
      all[session.id] = session
    }
    return session
  }

  /// The session of a cookie's id, refreshed; nil when unknown or idle too long.
  public func find(_ id: String?, now: ContinuousClock.Instant = .now) -> Session? {
    guard let id, !id.isEmpty else { return nil }
    return sessions.withLock { all -> Session? in
      guard var session = all[id] else { return nil }
      guard now - session.lastSeen < idle else {
        all[id] = nil
        return nil
      }
      session.lastSeen = now
      all[id] = session
      return session
    }
  }

  public func close(_ id: String) {
    _ = sessions.withLock { $0.removeValue(forKey: id) }
  }
}
