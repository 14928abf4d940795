import Blocking
import CLibPQ
import Foundation
import Synchronization
import ThumbCore

/// LISTENs on a channel on a connection of its own, while it is told to (`watching(true)`); `notifications`
/// yields when one arrives, and once each time it starts listening (anything notified meanwhile was not
/// heard).
///
/// PostgreSQL wakes every listening backend of the database at each notifying commit, whatever its
/// channel, and that costs the database about as much as a short statement per listener: a fleet's
/// cost per job would grow with its size if every worker listened. So only a few workers of a fleet
/// listen (the keeper's registry says which: `watching`); the others look for jobs by polling. One that
/// is not told to listen holds no connection at all.
///
/// It runs on a thread of its own, blocked in poll(2) on the connection's socket, so a notification is
/// seen within microseconds of its arrival and costs nothing while none come. If the connection breaks
/// (database restart, PgBouncer in transaction mode, a network cut) it reconnects with backoff and yields
/// once it is back, since notifications sent meanwhile are lost; the workers' polling covers
/// the gap.
public final class NotificationListener: Sendable {
  private let conninfo: String
  private let liveness: DatabaseLiveness
  private let group: DatabaseConnections?
  /// `LISTEN <channel>`.
  private let listenStatement: String
  /// Whether to listen (`watching(_:)`); the thread makes it so.
  private let watches: Atomic<Bool>
  private var wanted: Bool { watches.load(ordering: .acquiring) }
  /// Yields when a notification arrived (several since the last look are one). Ends with `stop()`.
  public let notifications: AsyncStream<Void>
  private let notify: AsyncStream<Void>.Continuation
  private let stopping = Atomic<Bool>(false)
  private let finished = DispatchSemaphore(value: 0)
  /// A pipe `stop()` and `watching(_:)` write to, so the poll ends at once rather than at its next
  /// timeout. Its read end does not block: the thread empties it whenever it wakes.
  private let wakePipe: (read: Int32, write: Int32) = {
    var fds: [Int32] = [-1, -1]
    guard pipe(&fds) == 0 else { return (-1, -1) }  // without it, changes wait for the poll timeout
    _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
    return (fds[0], fds[1])
  }()

  /// The channel the queue notifies (SQL/listen_jobs.sql).
  public static let jobsChannel = "thumbs_jobs"

  /// Listens on `channel`, by default the queue's, `thumbs_jobs`, from the start when `watching`.
  /// `group`: the process's connections to the same database, told when this one breaks (not when it
  /// goes elsewhere: a listening URL of its own).
  public init(
    conninfo: String, channel: String = jobsChannel, liveness: DatabaseLiveness = .standard,
    group: DatabaseConnections? = nil, watching: Bool = false
  ) {
    self.conninfo = conninfo
    watches = Atomic(watching)
    self.liveness = liveness
    self.group = group
    // The channel is ours (a constant), not user input; identifiers cannot be bound as parameters.
    listenStatement = channel == Self.jobsChannel ? SQL.ListenJobs.statement.text : "LISTEN \(channel)"
    (notifications, notify) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
  }

  public func start() {
    let thread = Thread { [self] in
      nameCurrentThread("thumbd-listen")
      self.serve()
      self.finished.signal()
    }
    thread.start()
  }

  /// Stops the thread and closes the connection; returns once both are done (within a poll tick).
  public func stop() {
    stopping.store(true, ordering: .releasing)
    wakeThread()
    finished.wait()
    notify.finish()
    close(wakePipe.read)
    close(wakePipe.write)
  }

  /// Listen, or not and hold no connection. Cheap when nothing changes.
  public func watching(_ on: Bool) {
    guard watches.exchange(on, ordering: .acquiringAndReleasing) != on else { return }
    wakeThread()
  }

  private func wakeThread() {
    var byte: UInt8 = 1
    _ = write(wakePipe.write, &byte, 1)
  }

  /// Empties the wake pipe.
  private func drainWakePipe() {
    var bytes = [UInt8](repeating: 0, count: 64)
    while read(wakePipe.read, &bytes, bytes.count) > 0 {}
  }

  private var isStopping: Bool { stopping.load(ordering: .acquiring) }

  /// Between tries to reconnect: 0.1 s doubling to 5 s.
  static let reconnectBackoff = Backoff(first: .milliseconds(100), cap: .seconds(5))

  private func serve() {
    var failures = 0
    while !isStopping {
      guard wanted else {
        // Told not to listen: no connection until told otherwise (or stopped).
        var wake = pollfd(fd: wakePipe.read, events: Int16(POLLIN), revents: 0)
        _ = poll(&wake, 1, 1000)
        drainWakePipe()
        continue
      }
      let generation = group?.generation ?? 0
      guard let conn = connect() else {
        group?.lost(seenIn: generation, reason: "the listening connection could not connect")
        failures += 1
        var wake = pollfd(fd: wakePipe.read, events: Int16(POLLIN), revents: 0)
        _ = poll(&wake, 1, Int32(Self.reconnectBackoff.seconds(afterFailures: failures) * 1000))
        drainWakePipe()
        continue
      }
      failures = 0
      notify.yield()  // anything enqueued while we were not listening
      // A broken connection tells the process's other connections; one of theirs ends this one too.
      if listen(on: conn, generation: generation) {
        group?.lost(
          seenIn: generation,
          reason: String(cString: PQerrorMessage(conn)).trimmingCharacters(in: .whitespacesAndNewlines))
      }
      PQfinish(conn)
    }
  }

  /// A listening connection (a refused LISTEN counts as a failure to connect).
  private func connect() -> OpaquePointer? {
    guard
      let conn = try? openConnection(
        conninfo, applicationName: "thumbd-listen", liveness: liveness, group: group)
    else { return nil }
    guard run(listenStatement, on: conn) else {
      PQfinish(conn)
      return nil
    }
    return conn
  }

  /// Runs LISTEN; false when it failed (the connection is to be dropped). Each waits no
  /// longer than any quick statement: a database that accepted the connection and then froze would
  /// otherwise hold the listener here for ever.
  private func run(_ statement: String, on conn: OpaquePointer) -> Bool {
    let deadline = liveness.deadline(for: SQL.ListenJobs.statement.deadline).map { ContinuousClock.now + $0 }
    let answer = PostgresExchange.run(conn, until: deadline) { PQsendQuery(conn, statement) == 1 }
    guard case .success(let result) = answer else { return false }
    defer { PQclear(result) }
    return PQresultStatus(result) == PGRES_COMMAND_OK
  }

  /// Waits for notifications until the connection breaks (true), or we are stopped, told to stop
  /// listening, or another connection of the group found the database gone (false).
  private func listen(on conn: OpaquePointer, generation: UInt64) -> Bool {
    while !isStopping && wanted {
      if let group, group.generation != generation { return false }
      var descriptors = [
        pollfd(fd: PQsocket(conn), events: Int16(POLLIN), revents: 0),
        pollfd(fd: wakePipe.read, events: Int16(POLLIN), revents: 0),
      ]
      guard case .success = SystemCall.run({ poll(&descriptors, 2, 1000) }) else { return true }
      if descriptors[1].revents != 0 {
        drainWakePipe()
        if isStopping { return false }
      }
      if descriptors[0].revents != 0 {
        if PQconsumeInput(conn) == 0 { return true }
        var received = false
        while let notification = PQnotifies(conn) {
          PQfreemem(notification)
          received = true
        }
        if received { notify.yield() }
      }
      if PQstatus(conn) != CONNECTION_OK { return true }
    }
    return false
  }
}
