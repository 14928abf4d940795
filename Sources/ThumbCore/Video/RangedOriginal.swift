/// Parts of a large original read by ranges (a video's head, its index and the keyframes a poster may
/// come from), each at its offset in a file of known size.
public struct RangedOriginal: Sendable, Equatable {
  /// The original's full size in bytes.
  public var total: Int
  /// Parts by offset, not overlapping.
  public private(set) var parts: [(offset: Int, bytes: [UInt8])]

  public init(total: Int, parts: [(offset: Int, bytes: [UInt8])] = []) {
    self.total = total
    self.parts = []
    for part in parts { add(part.bytes, at: part.offset) }
  }

  public static func == (a: RangedOriginal, b: RangedOriginal) -> Bool {
    a.total == b.total && a.parts.elementsEqual(b.parts) { $0.offset == $1.offset && $0.bytes == $1.bytes }
  }

  /// Bytes held (the parts' lengths).
  public var bytesHeld: Int { parts.reduce(0) { $0 + $1.bytes.count } }

  /// Adds bytes read at `offset`; what is already held is kept.
  public mutating func add(_ bytes: [UInt8], at offset: Int) {
    guard !bytes.isEmpty, offset >= 0 else { return }
    var start = offset
    var rest = bytes[...]
    // Cut what earlier parts already hold, then insert the pieces that are new.
    for part in parts where part.offset < start + rest.count && part.offset + part.bytes.count > start {
      let end = part.offset + part.bytes.count
      if part.offset <= start {
        let skip = min(rest.count, end - start)
        rest = rest.dropFirst(skip)
        start += skip
      } else {
        let before = part.offset - start
        insert(Array(rest.prefix(before)), at: start)
        let skip = min(rest.count, end - start)
        rest = rest.dropFirst(skip)
        start += skip
      }
      if rest.isEmpty { return }
    }
    insert(Array(rest), at: start)
  }

  /// Inserts bytes that no part holds, joining them with the parts they touch: a keyframe read in two
  /// reads is one part, which a decoder reads as one packet.
  private mutating func insert(_ bytes: [UInt8], at offset: Int) {
    guard !bytes.isEmpty else { return }
    let index = parts.firstIndex { $0.offset > offset } ?? parts.count
    parts.insert((offset, bytes), at: index)
    if index + 1 < parts.count, parts[index].offset + parts[index].bytes.count == parts[index + 1].offset {
      parts[index].bytes += parts[index + 1].bytes
      parts.remove(at: index + 1)
    }
    if index > 0, parts[index - 1].offset + parts[index - 1].bytes.count == parts[index].offset {
      parts[index - 1].bytes += parts[index].bytes
      parts.remove(at: index)
    }
  }

  /// Whether every byte of `range` is held.
  public func holds(_ range: Range<Int>) -> Bool {
    var next = range.lowerBound
    for part in parts where part.offset <= next && part.offset + part.bytes.count > next {
      next = part.offset + part.bytes.count
      if next >= range.upperBound { return true }
    }
    return range.isEmpty
  }

  /// The bytes of `range`, if every one of them is held.
  public func bytes(_ range: Range<Int>) -> [UInt8]? {
    guard holds(range) else { return nil }
    var out: [UInt8] = []
    out.reserveCapacity(range.count)
    var next = range.lowerBound
    for part in parts where part.offset <= next && part.offset + part.bytes.count > next {
      let from = next - part.offset
      let to = min(part.bytes.count, range.upperBound - part.offset)
      out += part.bytes[from..<to]
      next = part.offset + to
      if next >= range.upperBound { break }
    }
    return out
  }

  /// The part at offset 0 (the file's head), where formats are told apart.
  public var head: [UInt8]? { parts.first.flatMap { $0.offset == 0 ? $0.bytes : nil } }
}

/// Decides which byte ranges of a large original to read next, from what has been read so far: a
/// video's container index, then the keyframes a poster may come from. Imaging implements it (it needs
/// the demuxer); the fetcher and `thumbd thumbnail` run `RangedReading` with it.
public protocol RangePlanner: Sendable {
  /// The ranges to read next (empty: what is held serves), or nil when the original must be read whole
  /// (not a format read by ranges, or an index that cannot be found).
  func next(after held: RangedOriginal) -> [Range<Int>]?

  /// What to read more for a poster at `seconds` (a profile's poster time): the keyframe at or before
  /// it, when not held; empty when nothing is needed or known.
  func ranges(at seconds: Double, after held: RangedOriginal) -> [Range<Int>]

  /// Where the container's index lies, once the parts held say (nil: not known, or none).
  func index(in held: RangedOriginal) -> Range<Int>?

  /// Whether a file that begins with `head` (4 KiB) can be read in parts: a download of it too large
  /// for memory goes to the spool.
  func readsInParts(head: [UInt8]) -> Bool
}

extension RangePlanner {
  public func readsInParts(head: [UInt8]) -> Bool { ImageFormat.sniff(head)?.readsByRanges == true }
}

/// Reading a ranged original, as decisions: the head first (`headBytes`), then round by round what the
/// planner asks for, within a number of rounds and of bytes. The caller performs the reads (HTTP or S3
/// range requests, or a local file's) and hands the bytes back.
public struct RangedReading: Sendable {
  /// The head read first: enough for a container's first boxes, and for a moov at the start of most
  /// short clips.
  public static let headBytes = 256 * 1024
  /// Planning rounds before giving up (a moov after many top-level boxes): then the whole file.
  public static let maxRounds = 12

  public enum Step: Sendable, Equatable {
    /// Read these ranges (each may come back shorter only at the file's end), `add` them, ask again.
    case read([Range<Int>])
    /// The parts held serve.
    case done(RangedOriginal)
    /// Read the whole file (not read by ranges, or the rounds ran out).
    case whole
  }

  public private(set) var held: RangedOriginal
  let planner: any RangePlanner
  let maxBytes: Int
  var rounds = 0

  public init(total: Int, head: [UInt8], planner: any RangePlanner, maxBytes: Int) {
    held = RangedOriginal(total: total, parts: [(0, head)])
    self.planner = planner
    self.maxBytes = maxBytes
  }

  public mutating func next() throws(JobError) -> Step {
    rounds += 1
    guard rounds <= Self.maxRounds, let ranges = planner.next(after: held) else { return .whole }
    let missing = ranges.map { max(0, $0.lowerBound)..<min(held.total, $0.upperBound) }
      .filter { !$0.isEmpty && !held.holds($0) }
    if missing.isEmpty { return ranges.isEmpty ? .done(held) : .whole }
    let wanted = missing.reduce(0) { $0 + $1.count }
    guard held.bytesHeld + wanted <= maxBytes else {
      throw JobError(
        .tooLarge, "the parts of the video a poster needs are over the limit of \(maxBytes) bytes")
    }
    return .read(missing)
  }

  public mutating func add(_ bytes: [UInt8], at offset: Int) throws(JobError) {
    guard !bytes.isEmpty else {
      throw JobError(.corruptImage, "the original ends before byte \(offset), where its index points")
    }
    held.add(bytes, at: offset)
  }

  /// The whole reading with `read` performing each range.
  public static func run(
    total: Int, head: [UInt8], planner: any RangePlanner, maxBytes: Int,
    read: (Range<Int>) async throws(JobError) -> [UInt8]
  ) async throws(JobError) -> Step {
    var reading = RangedReading(total: total, head: head, planner: planner, maxBytes: maxBytes)
    while true {
      let step = try reading.next()
      guard case .read(let ranges) = step else { return step }
      for range in ranges { try reading.add(try await read(range), at: range.lowerBound) }
    }
  }

  /// The same, with a blocking `read` (a local file).
  public static func run(
    total: Int, head: [UInt8], planner: any RangePlanner, maxBytes: Int,
    read: (Range<Int>) throws(JobError) -> [UInt8]
  ) throws(JobError) -> Step {
    var reading = RangedReading(total: total, head: head, planner: planner, maxBytes: maxBytes)
    while true {
      let step = try reading.next()
      guard case .read(let ranges) = step else { return step }
      for range in ranges { try reading.add(try read(range), at: range.lowerBound) }
    }
  }
}
