import CVideoDecoder
public import ThumbCore

/// Which parts of an MP4 or QuickTime video to read for its poster (RangedReading asks, round by
/// round): the top-level boxes' headers up to `moov`, the whole `moov` (the index of every sample, at
/// the start or at the end of the file), then the first keyframes of the poster window, as the index
/// places them. Anything else (Matroska, a fragmented MP4, an index that cannot be found or is
/// unreasonably large, a picture size the header does not give) is read whole.
public struct VideoRangePlanner: RangePlanner {
  /// Keyframes read for the poster to be chosen among: the first is always read; more, up to this
  /// many, while those after the first add up to no more than `keyframeShare` of the file or
  /// `keyframeBytes`, whichever is more. Three cover a fade from black or a title card.
  public var keyframes = 3
  public var keyframeShare = 0.02
  public var keyframeBytes = 2 * 1024 * 1024
  /// A `moov` larger than this is not read by ranges (a long recording's index is a few MB).
  public var maxIndexBytes = 64 * 1024 * 1024

  public init() {}

  /// MP4-family files: Matroska and WebM (an EBML header) keep their index where only reading the
  /// file finds it.
  public func readsInParts(head: [UInt8]) -> Bool {
    ImageFormat.sniff(head)?.readsByRanges == true && head.first != 0x1A
  }

  /// Where the walk of the top-level boxes to `moov` stands.
  enum IndexSearch: Equatable {
    /// Read this box header next.
    case read(Range<Int>)
    case found(Range<Int>)
    /// Not an MP4-family video, or no index where its boxes say.
    case none
  }

  /// The top-level boxes' headers, one after another, to the index.
  static func findIndex(in held: RangedOriginal) -> IndexSearch {
    guard let head = held.parts.first, head.offset == 0, head.bytes.count >= 8 else { return .none }
    guard ImageFormat.sniff(head.bytes) == .video, head.bytes[0] != 0x1A else {
      return .none  // not an MP4-family video (Matroska starts 1A 45 DF A3)
    }
    var offset = 0
    var boxes = 0
    while offset < held.total, boxes < 64 {
      boxes += 1
      let headerRange = offset..<min(held.total, offset + 16)
      guard let header = held.bytes(headerRange) else { return .read(headerRange) }
      guard header.count >= 8 else { return .none }
      let size32 = header[0..<4].reduce(0) { $0 << 8 | Int($1) }
      let size: Int
      if size32 == 1 {
        guard header.count >= 16 else { return .none }
        size = header[8..<16].reduce(0) { $0 << 8 | Int($1) }
      } else {
        size = size32 == 0 ? held.total - offset : size32
      }
      guard size >= 8, size <= held.total - offset else { return .none }
      if header[4..<8].elementsEqual("moov".utf8) { return .found(offset..<(offset + size)) }
      offset += size
    }
    return .none
  }

  public func index(in held: RangedOriginal) -> Range<Int>? {
    if case .found(let index) = Self.findIndex(in: held) { return index }
    return nil
  }

  public func next(after held: RangedOriginal) -> [Range<Int>]? {
    let index: Range<Int>
    switch Self.findIndex(in: held) {
    case .read(let header): return [header]
    case .none: return nil
    case .found(let found): index = found
    }
    guard index.count <= maxIndexBytes else { return nil }
    guard held.holds(index) else { return [index] }
    guard let places = Self.keyframes(in: held, until: PosterChoice().window) else { return nil }
    guard let first = places.first else { return [] }
    var wanted = [first]
    var extra = 0
    for place in places.dropFirst() where wanted.count < keyframes {
      guard Double(extra + place.count) <= max(keyframeShare * Double(held.total), Double(keyframeBytes))
      else {
        break
      }
      extra += place.count
      wanted.append(place)
    }
    return wanted.filter { !held.holds($0) }
  }

  public func ranges(at seconds: Double, after held: RangedOriginal) -> [Range<Int>] {
    guard let last = Self.keyframes(in: held, until: seconds)?.last, !held.holds(last) else { return [] }
    return [last]
  }

  /// Where the index puts the keyframes up to `until` seconds, or nil when the container cannot be
  /// opened or has no index to read.
  static func keyframes(in held: RangedOriginal, until: Double) -> [Range<Int>]? {
    let file = VideoFile(.parts(held))
    var handle: OpaquePointer?
    var info = thumbd_video_info()
    var message = [CChar](repeating: 0, count: 128)
    return withExtendedLifetime(file.storage) { () -> [Range<Int>]? in
      guard
        thumbd_video_open(
          file.parts, Int32(file.parts.count), Int64(file.total), &handle, &info, &message, message.count)
          == 0
      else { return nil }
      defer { thumbd_video_close(handle) }
      return keyframes(of: handle, until: until, total: file.total)
    }
  }

  /// Where the index of an open video puts its keyframes up to `until` seconds (at most `max` of them),
  /// each within a file of `total` bytes; nil when the container has no index to read.
  static func keyframes(
    of video: OpaquePointer?, until: Double, total: Int,
    max: Int? = nil
  ) -> [Range<Int>]? {
    let max = max ?? (until.isFinite && until > PosterChoice().window ? 100_000 : 64)
    var offsets = [Int64](repeating: 0, count: max)
    var lengths = [Int64](repeating: 0, count: max)
    var times = [Double](repeating: 0, count: max)
    let count = thumbd_video_keyframes(video, until, &offsets, &lengths, &times, Int32(max))
    guard count >= 0 else { return nil }
    return (0..<Int(count)).compactMap { i in
      let start = Int(offsets[i])
      let length = Int(lengths[i])
      guard start >= 0, length > 0, start <= total - length else { return nil }
      return start..<(start + length)
    }
  }
}

/// A video's bytes as CVideoDecoder reads them: the parts held (the whole file is one), in one buffer
/// that lives as long as `storage`, each with its offset in the file.
struct VideoFile {
  let storage: OwnedBytes
  let parts: [thumbd_video_part]
  /// The file's size.
  let total: Int

  init(_ original: OriginalBytes) {
    let pieces: [(offset: Int, bytes: [UInt8])] =
      switch original {
      case .whole(let bytes): [(0, bytes)]
      case .parts(let held): held.parts
      }
    storage = OwnedBytes(joining: pieces.map(\.bytes))
    let base = storage.pointer.assumingMemoryBound(to: UInt8.self)
    var start = 0
    parts = pieces.map { piece in
      defer { start += piece.bytes.count }
      return thumbd_video_part(
        offset: Int64(piece.offset), length: Int64(piece.bytes.count), data: base + start)
    }
    total = original.fileSize
  }
}
