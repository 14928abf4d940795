/// Who may hold what under a byte budget: the bookkeeping of the worker's memory gate, without the
/// waiting (pure, so the fairness and liveness rules are unit-tested).
///
/// Two kinds of holder share the capacity:
///  * **Requests** (decodes): a job's predicted peak, granted first come, first served, with bounded
///    overtaking: a later request that fits now may start ahead of the first one in line at most
///    `maxOvertakes` times, after which the line is strict. Unbounded overtaking would starve a large
///    decode for as long as small ones keep coming; none at all leaves a core idle while the large one
///    waits for the running decode to end.
///  * **Takes** (downloads, and the originals they become): bytes taken as they arrive, never queued.
///    A download that cannot take its next chunk pauses instead. Takes must leave the head request room
///    to start once the granted requests have ended, or a stream of downloads would starve it; except in
///    a stall (a request waits and no granted request is left to give memory back), when only taking
///    lets the downloads end, and with them the stall (their jobs, queued behind, give their originals
///    up).
public struct ByteAdmission: Sendable {
  public let capacity: Int
  public private(set) var inUse = 0
  /// The part of `inUse` held by granted requests.
  public private(set) var requested = 0
  public let maxOvertakes: Int
  private var waiting: [Request] = []
  /// How many later requests have started ahead of the current head.
  private var headOvertaken = 0

  private struct Request {
    var id: UInt64
    var bytes: Int
    /// Taken bytes the requester holds while it waits (its original).
    var held: Int
  }

  public init(capacity: Int, maxOvertakes: Int = 0) {
    self.capacity = capacity
    self.maxOvertakes = maxOvertakes
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
  public func fitsNow(_ bytes: Int) -> Bool {
    inUse + bytes <= capacity && (waiting.isEmpty || headOvertaken < maxOvertakes)
  }

  /// `held`: bytes the requester already holds as takes (its downloaded original), which it keeps
  /// while its request runs, so the two together must fit the capacity.
  public mutating func request(id: UInt64, bytes: Int, held: Int = 0) -> Answer {
    if bytes + held > capacity { return .neverFits }
    if fitsNow(bytes) {
      if !waiting.isEmpty { headOvertaken += 1 }
      inUse += bytes
      requested += bytes
      return .granted
    }
    waiting.append(Request(id: id, bytes: bytes, held: held))
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
    guard inUse + bytes <= capacity else { return false }
    if let head = waiting.first, !isStalled, inUse - requested + bytes + head.bytes > capacity {
      return false
    }
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
    if index == 0 { headOvertaken = 0 }
    return (true, admitFromHead())
  }

  /// In a stall with a shortfall, withdraws the queued requests behind the head that hold an original:
  /// their holders should let the originals go (which gives the head its room), and ask again later.
  /// Returns them, and any requests their withdrawal let start; nil when there is no such stall.
  public mutating func withdrawHoldersBehindHead() -> (withdrawn: [UInt64], granted: [UInt64])? {
    guard isStalled, shortfall > 0 else { return nil }
    let withdrawn = waiting.dropFirst().filter { $0.held > 0 }.map(\.id)
    waiting.removeAll { request in withdrawn.contains(request.id) }
    return (withdrawn, withdrawn.isEmpty ? [] : admitFromHead())
  }

  private mutating func admitFromHead() -> [UInt64] {
    var granted: [UInt64] = []
    while let head = waiting.first, inUse + head.bytes <= capacity {
      waiting.removeFirst()
      headOvertaken = 0
      grant(head, to: &granted)
    }
    // The head still does not fit: later requests that do may start ahead of it, a bounded number of times.
    var index = 1
    while index < waiting.count, headOvertaken < maxOvertakes {
      if inUse + waiting[index].bytes <= capacity {
        headOvertaken += 1
        grant(waiting.remove(at: index), to: &granted)
      } else {
        index += 1
      }
    }
    return granted
  }

  private mutating func grant(_ request: Request, to granted: inout [UInt64]) {
    inUse += request.bytes
    requested += request.bytes
    granted.append(request.id)
  }
}
