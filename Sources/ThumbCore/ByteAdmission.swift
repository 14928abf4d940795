/// Who may hold what under a byte budget: the bookkeeping of the worker's memory gate, without the
/// waiting (pure, so the fairness and liveness rules are unit-tested).
///
/// Two kinds of holder share the capacity:
///  * **Requests** (decodes): a job's predicted peak, granted strictly first come, first served. A
///    request that does not fit blocks every later one, even the small ones that would fit. Letting
///    small jobs overtake would starve a large one for as long as small ones keep coming.
///  * **Takes** (downloads, and the originals they become): bytes taken as they arrive, never queued.
///    A download that cannot take its next chunk pauses instead. A take must leave the head request its
///    room, or a stream of downloads would starve the decode that waits; except in a stall (a request
///    waits and no granted request is left to give memory back), when only taking lets the downloads
///    end, and with them the stall (their jobs, queued behind, give their originals up).
public struct ByteAdmission: Sendable {
  public let capacity: Int
  public private(set) var inUse = 0
  /// The part of `inUse` held by granted requests.
  public private(set) var requested = 0
  private var waiting: [(id: UInt64, bytes: Int)] = []

  public init(capacity: Int) {
    self.capacity = capacity
  }

  public enum Answer: Equatable, Sendable {
    case granted
    case queued
    /// More than the whole capacity: it could never start.
    case neverFits
  }

  public var queuedCount: Int { waiting.count }

  /// A request waits, and no granted request is left whose release could let it start.
  public var isStalled: Bool { !waiting.isEmpty && requested == 0 }

  /// How many bytes the head request still lacks (0 when nothing waits).
  public var shortfall: Int {
    guard let head = waiting.first else { return 0 }
    return max(0, inUse + head.bytes - capacity)
  }

  /// Whether a request for `bytes` would be granted at once.
  public func fitsNow(_ bytes: Int) -> Bool { waiting.isEmpty && inUse + bytes <= capacity }

  /// Whether request `id` is first in the queue.
  public func isHead(_ id: UInt64) -> Bool { waiting.first?.id == id }

  /// `held`: bytes the requester already holds as takes (its downloaded original), which it keeps
  /// while its request runs, so the two together must fit the capacity.
  public mutating func request(id: UInt64, bytes: Int, held: Int = 0) -> Answer {
    if bytes + held > capacity { return .neverFits }
    if waiting.isEmpty && inUse + bytes <= capacity {
      inUse += bytes
      requested += bytes
      return .granted
    }
    waiting.append((id, bytes))
    return .queued
  }

  /// Returns a granted request's `bytes`; answers the queued requests that may start now, in order.
  public mutating func release(bytes: Int) -> [UInt64] {
    inUse -= bytes
    requested -= bytes
    return admitFromHead()
  }

  /// Takes `bytes` for a download if they fit beside what is held, leaving the head request its room
  /// unless the gate is stalled. Never queues.
  public mutating func take(_ bytes: Int) -> Bool {
    let spared = isStalled ? 0 : (waiting.first?.bytes ?? 0)
    guard inUse + bytes + spared <= capacity else { return false }
    inUse += bytes
    return true
  }

  /// Gives back taken bytes; answers the queued requests that may start now.
  public mutating func give(_ bytes: Int) -> [UInt64] {
    inUse -= bytes
    return admitFromHead()
  }

  /// Withdraws a queued request (its job was abandoned). Returns any later requests it was blocking.
  public mutating func cancel(id: UInt64) -> (wasQueued: Bool, granted: [UInt64]) {
    guard let index = waiting.firstIndex(where: { $0.id == id }) else { return (false, []) }
    waiting.remove(at: index)
    return (true, admitFromHead())
  }

  private mutating func admitFromHead() -> [UInt64] {
    var granted: [UInt64] = []
    while let head = waiting.first, inUse + head.bytes <= capacity {
      waiting.removeFirst()
      inUse += head.bytes
      requested += head.bytes
      granted.append(head.id)
    }
    return granted
  }
}
