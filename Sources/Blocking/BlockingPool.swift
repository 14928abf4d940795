import Dispatch
import Foundation
import Synchronization

/// A fixed set of threads for work that blocks: libpq round trips, libcurl transfers, image decoding.
///
/// Swift's cooperative pool has one thread per core; a blocking call parked on it stalls every task
/// behind it, so one slow origin or big decode would starve the whole worker. Work submitted here runs on
/// threads of our own and resumes the awaiting task when it returns.
public final class BlockingPool: Sendable {
  private struct State {
    var pending: [(@Sendable () -> Void)?] = []
    var next = 0
    var stopping = false
  }

  private let state = Mutex(State())
  private let available = DispatchSemaphore(value: 0)
  public let threadCount: Int

  /// `name`: the threads are called `name-0`, `name-1`, ...; Linux keeps 15 bytes of a thread's name and
  /// refuses a longer one, so keep it short.
  public init(threads: Int, name: String) {
    precondition(threads > 0, "a pool needs at least one thread")
    threadCount = threads
    for index in 0..<threads {
      let thread = Thread { [self] in
        nameCurrentThread("\(name)-\(index)")
        self.serve()
      }
      thread.stackSize = 4 << 20
      thread.start()
    }
  }

  /// Runs `body` on one of the pool's threads and returns its result to the caller.
  public func run<T: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
    let result: Result<T, E> = await withCheckedContinuation { continuation in
      submit { continuation.resume(returning: Result(catching: body)) }
    }
    return try result.get()
  }

  /// Lets the threads finish what is queued and exit. Work submitted afterwards never runs.
  public func shutdown() {
    state.withLock { $0.stopping = true }
    for _ in 0..<threadCount { available.signal() }
  }

  private func submit(_ work: @escaping @Sendable () -> Void) {
    state.withLock { $0.pending.append(work) }
    available.signal()
  }

  private func serve() {
    while true {
      available.wait()
      let work: (@Sendable () -> Void)? = state.withLock { state in
        guard state.next < state.pending.count else { return nil }
        // Taken out, not just passed: a closure left in the array would keep what it captured (an
        // original's bytes, its memory hold) alive until the next compaction.
        let work = state.pending[state.next].take()
        state.next += 1
        // Compact now and then so the array does not grow for the life of the process.
        if state.next > 64 && state.next * 2 > state.pending.count {
          state.pending.removeFirst(state.next)
          state.next = 0
        }
        return work
      }
      if let work {
        work()
      } else if state.withLock({ $0.stopping }) {
        return
      }
    }
  }
}
