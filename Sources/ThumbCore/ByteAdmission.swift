/// Who may start now under a byte budget: the bookkeeping of the worker's memory gate, without the
/// waiting (pure, so the fairness rules are unit-tested).
///
/// Strictly first come, first served: a request that does not fit blocks every later one, even the
/// small ones that would fit. Letting small jobs overtake would starve a large one for as long as small
/// ones keep coming; waiting costs a little throughput while memory drains, and never starves anyone.
public struct ByteAdmission: Sendable {
  public let capacity: Int
  public private(set) var inUse = 0
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

  /// Whether a request for `bytes` would be granted at once.
  public func fitsNow(_ bytes: Int) -> Bool { waiting.isEmpty && inUse + bytes <= capacity }

  public mutating func request(id: UInt64, bytes: Int) -> Answer {
    if bytes > capacity { return .neverFits }
    if waiting.isEmpty && inUse + bytes <= capacity {
      inUse += bytes
      return .granted
    }
    waiting.append((id, bytes))
    return .queued
  }

  /// Returns `bytes`; answers the queued requests that may start now, in order.
  public mutating func release(bytes: Int) -> [UInt64] {
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
      granted.append(head.id)
    }
    return granted
  }
}
