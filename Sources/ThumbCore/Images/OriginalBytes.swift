/// An original's bytes as a job holds them: the whole file, or parts of it.
public enum OriginalBytes: Sendable, Equatable {
  /// The whole file.
  case whole([UInt8])
  /// Parts of a file of known size: a video read by ranges (from its origin, or from the spool).
  case parts(RangedOriginal)

  /// The file's first bytes, as far as they are held: where formats are told apart.
  public var head: [UInt8] {
    switch self {
    case .whole(let bytes): bytes
    case .parts(let held): held.head ?? []
    }
  }

  /// The format its head sniffs as.
  public var format: ImageFormat? { ImageFormat.sniff(head) }

  /// Bytes held in memory.
  public var count: Int {
    switch self {
    case .whole(let bytes): bytes.count
    case .parts(let held): held.bytesHeld
    }
  }

  /// The file's size (of which `count` bytes are held).
  public var fileSize: Int {
    switch self {
    case .whole(let bytes): bytes.count
    case .parts(let held): held.total
    }
  }

  /// The whole file's bytes (nil: only parts are held).
  public var whole: [UInt8]? {
    if case .whole(let bytes) = self { return bytes }
    return nil
  }

  /// The parts held (nil: the whole file is).
  public var parts: RangedOriginal? {
    if case .parts(let held) = self { return held }
    return nil
  }
}
