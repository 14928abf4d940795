import Blocking
import CLibPQ
import Foundation

/// One statement's round trip on a libpq connection, waiting for the answer at most until a deadline.
///
/// libpq's blocking calls (PQexecParams and friends) wait in poll(2) without a timeout; this sends with
/// the PQsend* call given and then waits on the socket itself, so a database that keeps its connection
/// alive but never answers costs the statement's deadline, not the worker. Sending is left blocking:
/// the request is small and `tcp_user_timeout` bounds a send that is never acknowledged.
enum PostgresExchange {
  /// Why an exchange ended without a result.
  enum Failure: Error {
    /// The PQsend* call or reading the answer failed: PQerrorMessage says why.
    case broken
    /// No answer within the deadline: the connection is in the middle of a statement and unusable.
    case timedOut
  }

  /// Sends with `send` (a PQsend* call, true when it was accepted) and returns the statement's result
  /// (PQexec's: the first error, else the last result), owned by the caller. `deadline` nil: waits as
  /// long as the network bounds allow.
  static func run(
    _ conn: OpaquePointer, until deadline: ContinuousClock.Instant?, send: () -> Bool
  ) -> Result<OpaquePointer, Failure> {
    guard send() else { return .failure(.broken) }
    var kept: OpaquePointer?
    while true {
      while PQisBusy(conn) == 1 {
        guard waitReadable(conn, until: deadline) else {
          if let kept { PQclear(kept) }
          return .failure(.timedOut)
        }
        if PQconsumeInput(conn) == 0 {
          if let kept { PQclear(kept) }
          return .failure(.broken)
        }
      }
      guard let result = PQgetResult(conn) else { break }
      if let previous = kept, PQresultStatus(previous) == PGRES_FATAL_ERROR {
        PQclear(result)
      } else {
        if let kept { PQclear(kept) }
        kept = result
      }
    }
    guard let kept else { return .failure(.broken) }
    return .success(kept)
  }

  /// True when the socket has something to read (or has failed: PQconsumeInput then says so); false
  /// when the deadline passed first.
  private static func waitReadable(_ conn: OpaquePointer, until deadline: ContinuousClock.Instant?) -> Bool {
    let socket = PQsocket(conn)
    guard socket >= 0 else { return true }
    while true {
      var timeout: Int32 = -1
      if let deadline {
        let left = ContinuousClock.now.duration(to: deadline)
        guard left > .zero else { return false }
        let (seconds, attoseconds) = left.components
        timeout = Int32(min(seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1, Int64(Int32.max)))
      }
      var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
      switch SystemCall.run({ poll(&descriptor, 1, timeout) }) {
      case .success(let ready) where ready > 0: return true
      case .success: continue
      case .failure: return true
      }
    }
  }
}
