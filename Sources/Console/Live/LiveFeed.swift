import Queue
import Synchronization

/// Tells the open pages that something changed: the queue's notifications (a job enqueued or put
/// back, `thumbs_jobs`) and the events' (a job succeeded, failed, was cancelled or forgotten,
/// `thumbs_events`), each on a connection of its own. Pages then fetch their live regions again; the
/// notification itself carries nothing a page shows.
///
/// PostgreSQL wakes every listening backend at each notifying commit (NotificationListener), so the
/// console listens only while a page is open: a console nobody looks at costs the queue nothing.
final class LiveFeed: Sendable {
  private let listeners: [NotificationListener]
  private let subscribers = Mutex<(next: Int, all: [Int: AsyncStream<Void>.Continuation])>((0, [:]))

  init(conninfo: String) {
    listeners = [NotificationListener.jobsChannel, "thumbs_events"].map {
      NotificationListener(conninfo: conninfo, channel: $0, watching: false)
    }
  }

  /// Starts listening and forwards every notification to the subscribers until `stop()`.
  func run() async {
    listeners.forEach { $0.start() }
    await withTaskGroup(of: Void.self) { group in
      for listener in listeners {
        group.addTask { [self] in
          for await _ in listener.notifications { broadcast() }
        }
      }
    }
  }

  /// Ends the listeners and every page's stream. Blocks until the listeners' threads have ended: call
  /// it off the cooperative pool.
  func stop() {
    listeners.forEach { $0.stop() }
    // Finished outside the lock: a stream's onTermination takes it.
    let streams = subscribers.withLock { state in
      defer { state.all.removeAll() }
      return Array(state.all.values)
    }
    streams.forEach { $0.finish() }
  }

  /// A stream that yields once for each burst of changes (a subscriber that is slow to read sees one).
  func subscribe() -> AsyncStream<Void> {
    let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    let id = subscribers.withLock { state in
      state.next += 1
      state.all[state.next] = continuation
      return state.next
    }
    listen()
    continuation.onTermination = { [weak self] _ in
      guard let self else { return }
      _ = subscribers.withLock { $0.all.removeValue(forKey: id) }
      listen()
    }
    return stream
  }

  /// Listens while anyone subscribes (NotificationListener connects and disconnects on its thread).
  /// Decided and told under the lock, so that a subscribe and an unsubscribe that overlap leave the
  /// listeners as the last count says.
  private func listen() {
    subscribers.withLock { state in
      let wanted = !state.all.isEmpty
      listeners.forEach { $0.watching(wanted) }
    }
  }

  private func broadcast() {
    subscribers.withLock { state in state.all.values.forEach { $0.yield() } }
  }
}
