/// How long the database may stay silent before a connection to it is taken for gone: the bound on every
/// wait on the network that no statement's own length decides.
///
/// A database host that vanishes (a machine that dies, a cloud network that drops it during a failover)
/// closes nothing: no RST, no FIN, its packets go nowhere. With the kernel's defaults a connection
/// notices after TCP keepalives (2 hours, or 30 s idle plus nine probes 75 s apart: 12 minutes) or,
/// with a statement in flight, after TCP gives up retransmitting (about 15 minutes). libpq's settings
/// bound both, and the first connection attempt to each host of a multi-host URL:
///
/// - `keepalives_idle`, `keepalives_interval`, `keepalives_count`: an idle connection (a LISTEN, a
///   statement waiting for its answer) is probed after `idle` seconds without a packet, and given up
///   after `count` probes unanswered;
/// - `tcp_user_timeout`: data sent and not acknowledged for this long gives the connection up;
/// - `connect_timeout`: per host, so a vanished first host of `host=a,b` costs this before `b` is tried.
///
/// A slow but alive database is not mistaken for a dead one: its kernel answers the probes and
/// acknowledges the data however long a statement runs. Anything the caller's URL or conninfo sets
/// overrides these (they are given to libpq before it, `expand_dbname`).
public struct DatabaseLiveness: Sendable, Equatable {
  /// About how long a vanished database goes unnoticed; at least 2 (libpq's least connect timeout).
  public var seconds: Int

  public init(seconds: Int) {
    self.seconds = max(2, seconds)
  }

  /// Fits a failover of about 30 s: gone noticed within 10 s, the next host tried after 10 s more.
  public static let standard = DatabaseLiveness(seconds: 10)

  /// How long a statement of this kind may go unanswered (nil: as long as the network bounds allow).
  public func deadline(for kind: StatementDeadline) -> Duration? {
    switch kind {
    case .quick: .seconds(seconds * 2)
    case .batch: .seconds(seconds * 6)
    case .none: nil
    }
  }

  /// The libpq keywords and values, in the order given to PQconnectdbParams (before the caller's).
  var parameters: [(key: String, value: String)] {
    let count = 3
    let interval = max(1, seconds / 5)
    let idle = max(1, seconds - interval * count)
    return [
      ("connect_timeout", "\(seconds)"), ("keepalives", "1"), ("keepalives_idle", "\(idle)"),
      ("keepalives_interval", "\(interval)"), ("keepalives_count", "\(count)"),
      ("tcp_user_timeout", "\(seconds * 1000)"),
    ]
  }
}
