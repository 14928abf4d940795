import CLibPQ
import Synchronization

/// What the connections of one process to one database learn together.
///
/// - **Gone for one, gone for all.** When one connection finds the database gone (its statement failed
///   with the connection, a keepalive went unanswered), the others are on the same vanished host too,
///   each about to wait out its own timeout on its next statement. `lost()` starts a new generation:
///   every connection made in an older one is dropped and made again before its next statement.
/// - **The host that answered last goes first.** With several hosts in the URL (`host=a,b`), libpq tries
///   them in order, and a vanished first host costs every new connection its connect timeout. After a
///   failover the host that answered is tried first.
///
/// A process-wide value for the worker's connections; a connection without one behaves as before.
/// `changes` hears, once each, that the database was lost and that a connection reached it again.
public final class DatabaseConnections: Sendable {
  public enum Change: Sendable {
    /// A connection found the database gone (the first of a generation to say so).
    case lost(reason: String)
    /// A connection reached the database again after a loss.
    case back
  }

  private let generationCounter = Atomic<UInt64>(0)
  /// The index, in the URL's host list, of the host that answered last.
  private let preferred = Mutex<Int>(0)
  /// The generation whose first connection was announced `back`.
  private let announced = Mutex<UInt64>(0)
  private let changes: (@Sendable (Change) -> Void)?

  public init(changes: (@Sendable (Change) -> Void)? = nil) {
    self.changes = changes
  }

  var generation: UInt64 { generationCounter.load(ordering: .acquiring) }

  /// A connection found the database gone: every connection of an older generation is made again.
  func lost(seenIn generation: UInt64, reason: @autoclosure () -> String = "") {
    // Only the first of several connections failing together starts a new generation.
    let (exchanged, _) = generationCounter.compareExchange(
      expected: generation, desired: generation &+ 1, ordering: .acquiringAndReleasing)
    if exchanged { changes?(.lost(reason: reason())) }
  }

  /// `host`, `hostaddr` and `port` of a multi-host conninfo, each list rotated so that the host that
  /// answered last comes first; empty for a single host (nothing to reorder).
  func hostOrder(for conninfo: String) -> [(key: String, value: String)] {
    let lists = Self.hostLists(conninfo)
    guard let hosts = lists["host"] ?? lists["hostaddr"], hosts.count > 1 else { return [] }
    let first = preferred.withLock { $0 } % hosts.count
    guard first > 0 else { return [] }
    return lists.sorted { $0.key < $1.key }.map { key, values in
      let rotated = values.count == hosts.count ? Array(values[first...] + values[..<first]) : values
      return (key, rotated.joined(separator: ","))
    }
  }

  /// Records which host of the URL `conn` reached (the connection was made with `hostOrder`).
  func answered(_ conn: OpaquePointer, conninfo: String) {
    let current = generation
    let first = announced.withLock { announced -> Bool in
      guard current > announced else { return false }
      announced = current
      return true
    }
    if first { changes?(.back) }
    let lists = Self.hostLists(conninfo)
    guard let hosts = lists["host"] ?? lists["hostaddr"], hosts.count > 1,
      let reachedHost = PQhost(conn).map({ String(cString: $0) }),
      let reachedPort = PQport(conn).map({ String(cString: $0) })
    else { return }
    let ports = lists["port"] ?? []
    let addresses = lists["hostaddr"] ?? []
    let index = hosts.indices.first { i in
      let port = ports.count == hosts.count ? ports[i] : (ports.first ?? "5432")
      let names = [hosts[i]] + (addresses.count == hosts.count ? [addresses[i]] : [])
      return names.contains(reachedHost) && (port.isEmpty || port == reachedPort)
    }
    if let index { prefer(index) }
  }

  func prefer(_ index: Int) { preferred.withLock { $0 = index } }

  /// The comma-separated host, hostaddr and port lists of a conninfo or URL, as libpq parses them.
  static func hostLists(_ conninfo: String) -> [String: [String]] {
    var error: UnsafeMutablePointer<CChar>?
    guard let options = PQconninfoParse(conninfo, &error) else {
      if let error { PQfreemem(error) }
      return [:]
    }
    defer { PQconninfoFree(options) }
    var lists: [String: [String]] = [:]
    var index = 0
    while let keyword = options[index].keyword {
      let key = String(cString: keyword)
      if ["host", "hostaddr", "port"].contains(key), let value = options[index].val {
        lists[key] = String(cString: value).split(separator: ",", omittingEmptySubsequences: false).map(
          String.init)
      }
      index += 1
    }
    return lists
  }
}
