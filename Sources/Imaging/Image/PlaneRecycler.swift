import Glibc
import Synchronization

/// Plane buffers kept after a render for the next one's planes of the same size.
///
/// The worker returns every large buffer to the kernel when it is freed, so that its memory stays within
/// its budget (docs/architecture.md); the next photo then pays for each page of its planes again, a page
/// fault and a zeroed page each: a fifth of a phone JPEG's CPU in the worker. Phone photos come in a
/// few sizes, so most planes of the next photo have the byte count of one just freed. Kept buffers are
/// counted under the memory budget like any held memory: a buffer is kept only if the budget has room
/// for it (`keep`), its bytes are handed back to the budget when a plane takes it or it is freed
/// (`released`), and the budget drops kept buffers first when a decode lacks memory (`drop`).
public final class PlaneRecycler: Sendable {
  /// Planes smaller than this come from malloc's heap, which keeps them without page faults anyway.
  public static let smallest = 1 << 20

  /// A kept buffer. @unchecked Sendable: a kept buffer belongs to no plane; it is handed to one at a time.
  private struct Buffer: @unchecked Sendable {
    let base: UnsafeMutableRawPointer
    let count: Int
  }

  private struct State {
    /// Oldest first.
    var kept: [Buffer] = []
    var bytes = 0
  }

  private let capacity: Int
  private let admit: @Sendable (Int) -> Bool
  private let released: @Sendable (Int) -> Void
  private let state = Mutex(State())

  /// `capacity`: the most bytes kept. `keep(bytes)`: whether the budget takes them now (it counts them
  /// from then on); `released(bytes)`: hands counted bytes back to the budget.
  public init(
    capacity: Int, keep admit: @escaping @Sendable (Int) -> Bool, released: @escaping @Sendable (Int) -> Void
  ) {
    self.capacity = capacity
    self.admit = admit
    self.released = released
  }

  /// The smallest kept buffer of at least `count` bytes and at most a quarter more (a plane of another
  /// photo of nearly the same size), and its size; its contents are undefined. Nil when none is kept.
  func take(_ count: Int) -> (base: UnsafeMutableRawPointer, size: Int)? {
    guard count >= Self.smallest else { return nil }
    let found = state.withLock { state -> Buffer? in
      let fitting = state.kept.indices.filter { (count...(count + count / 4)).contains(state.kept[$0].count) }
      guard let best = fitting.min(by: { state.kept[$0].count < state.kept[$1].count }) else { return nil }
      state.bytes -= state.kept[best].count
      return state.kept.remove(at: best)
    }
    guard let found else { return nil }
    // The plane it becomes is covered by its render's own reservation.
    released(found.count)
    return (found.base, found.count)
  }

  /// Keeps a freed plane's buffer when it is large enough and the budget has room; false: the caller
  /// frees it. The oldest kept buffers go first to make room under `capacity`.
  func keep(_ base: UnsafeMutableRawPointer, count: Int) -> Bool {
    // A recycler no longer installed keeps nothing more: what it holds was dropped when it was replaced.
    guard count >= Self.smallest, count <= capacity, Self.current === self else { return false }
    let evicted = state.withLock { state -> [Buffer] in
      var evicted: [Buffer] = []
      while state.bytes + count > capacity, !state.kept.isEmpty {
        let oldest = state.kept.removeFirst()
        state.bytes -= oldest.count
        evicted.append(oldest)
      }
      return evicted
    }
    free(evicted)
    guard admit(count) else { return false }
    state.withLock { state in
      state.kept.append(Buffer(base: base, count: count))
      state.bytes += count
    }
    return true
  }

  /// Frees kept buffers, oldest first, until `bytes` are freed or none is left (the budget's relief).
  public func drop(atLeast bytes: Int) {
    let dropped = state.withLock { state -> [Buffer] in
      var dropped: [Buffer] = []
      var freed = 0
      while freed < bytes, !state.kept.isEmpty {
        let oldest = state.kept.removeFirst()
        state.bytes -= oldest.count
        freed += oldest.count
        dropped.append(oldest)
      }
      return dropped
    }
    free(dropped)
  }

  /// Bytes kept now: for tests and logs.
  public var keptBytes: Int { state.withLock { $0.bytes } }

  private func free(_ buffers: [Buffer]) {
    guard !buffers.isEmpty else { return }
    for buffer in buffers { Glibc.free(buffer.base) }
    released(buffers.reduce(0) { $0 + $1.count })
  }

  // MARK: The process's recycler

  private static let installed = Mutex<PlaneRecycler?>(nil)

  /// Makes `recycler` the one every plane of this process uses (nil: none, planes are freed). A
  /// recycler replaced drops what it kept.
  public static func install(_ recycler: PlaneRecycler?) {
    let previous = installed.withLock { current in
      defer { current = recycler }
      return current
    }
    previous?.drop(atLeast: .max)
  }

  static var current: PlaneRecycler? { installed.withLock { $0 } }
}
