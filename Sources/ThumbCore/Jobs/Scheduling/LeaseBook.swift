/// The leases one worker process holds, and what has become of each. Pure bookkeeping: the worker's
/// loops do the I/O and consult this to decide which writes to make and which results to throw away.
///
/// A lease moves `held → finished` when its job's outcome is written, `held → lost` when a heartbeat is
/// refused (expired and taken, or cancelled), and `held → handedBack` when a stopping worker returns it.
/// Only a held lease may have its outcome written; every other state means "discard the results".
public struct LeaseBook<Payload> {
  public enum Status: Sendable, Equatable {
    case held
    case lost
    case handedBack
  }

  public struct Entry {
    public var token: String
    public var payload: Payload
    public var status: Status
  }

  private var entries: [Int64: Entry] = [:]

  public init() {}

  public var count: Int { entries.count }

  public var heldCount: Int { entries.values.filter { $0.status == .held }.count }

  /// Records a new lease. If the book still has an older lease on the same job (this worker's lease
  /// expired unnoticed, say during a database outage, and the job came back to it), that one is over:
  /// it is returned so its work can be abandoned, and its task will find its token no longer current.
  @discardableResult
  public mutating func hold(id: Int64, token: String, payload: Payload) -> Payload? {
    let previous = entries[id]
    entries[id] = Entry(token: token, payload: payload, status: .held)
    return previous?.payload
  }

  /// The (id, token) pairs to extend in the next heartbeat, in id order.
  public func leasesToExtend() -> [(id: Int64, token: String)] {
    entries.filter { $0.value.status == .held }.map { (id: $0.key, token: $0.value.token) }.sorted {
      $0.id < $1.id
    }
  }

  /// Applies a heartbeat's answer: every lease that was sent but not extended is lost (unless the job
  /// has been leased again since, under another token). Returns the payloads of the leases that were
  /// lost just now, so their work can be abandoned.
  public mutating func heartbeatAnswered(
    sent: [(id: Int64, token: String)], extended: Set<Int64>
  ) -> [(
    id: Int64, payload: Payload
  )] {
    var lost: [(id: Int64, payload: Payload)] = []
    for (id, token) in sent where !extended.contains(id) {
      guard var entry = entries[id], entry.token == token, entry.status == .held else { continue }
      entry.status = .lost
      entries[id] = entry
      lost.append((id, entry.payload))
    }
    return lost
  }

  /// Marks every held lease handed back and returns them (with their tokens), for the hand-back write.
  public mutating func handBackAll() -> [(id: Int64, token: String, payload: Payload)] {
    var returned: [(id: Int64, token: String, payload: Payload)] = []
    for (id, entry) in entries where entry.status == .held {
      entries[id]?.status = .handedBack
      returned.append((id, entry.token, entry.payload))
    }
    return returned.sorted { $0.id < $1.id }
  }

  /// The status of the lease `token` on job `id`; nil once it is out of the book or superseded.
  public func status(of id: Int64, token: String) -> Status? {
    guard let entry = entries[id], entry.token == token else { return nil }
    return entry.status
  }

  /// Removes the lease once its job's task is over, returning the status it ended in. A superseded
  /// lease (the job was leased again since) leaves the newer one alone and returns nil.
  @discardableResult
  public mutating func release(id: Int64, token: String) -> Status? {
    guard let entry = entries[id], entry.token == token else { return nil }
    entries.removeValue(forKey: id)
    return entry.status
  }
}
