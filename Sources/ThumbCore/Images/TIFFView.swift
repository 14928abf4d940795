/// A TIFF structure (an EXIF block's body, a maker note's directory) read with every offset checked:
/// the bytes come from strangers, and anything out of place reads as nil, never a crash.
struct TIFFView {
  let data: UnsafeRawBufferPointer
  let littleEndian: Bool

  /// A TIFF structure: its byte order mark ("II" or "MM") and the magic number 42.
  init?(tiff data: UnsafeRawBufferPointer) {
    guard data.count >= 8, let order = Self.order(data[0], data[1]) else { return nil }
    self.init(data, littleEndian: order)
    guard u16(2) == 42 else { return nil }
  }

  init(_ data: UnsafeRawBufferPointer, littleEndian: Bool) {
    self.data = data
    self.littleEndian = littleEndian
  }

  /// "II" is little-endian, "MM" big-endian.
  static func order(_ a: UInt8, _ b: UInt8) -> Bool? {
    switch (a, b) {
    case (0x49, 0x49): true
    case (0x4D, 0x4D): false
    default: nil
    }
  }

  /// The first directory's offset.
  var firstDirectory: Int? { u32(4) }

  func u16(_ at: Int) -> Int? {
    guard at >= 0, at + 2 <= data.count else { return nil }
    let a = Int(data[at])
    let b = Int(data[at + 1])
    return littleEndian ? a | b << 8 : a << 8 | b
  }

  func u32(_ at: Int) -> Int? {
    guard let lo = u16(littleEndian ? at : at + 2), let hi = u16(littleEndian ? at + 2 : at) else {
      return nil
    }
    return hi << 16 | lo
  }

  /// One directory entry: its tag, type and count, and where its 4-byte value field is.
  struct Entry {
    var tag: Int
    var type: Int
    var count: Int
    var valueField: Int
  }

  /// The entry of `tag` in the directory at `offset`.
  func entry(_ tag: Int, inDirectoryAt offset: Int) -> Entry? {
    guard let count = u16(offset) else { return nil }
    for index in 0..<count {
      let at = offset + 2 + index * 12
      guard let found = u16(at) else { return nil }
      guard found == tag, let type = u16(at + 2), let n = u32(at + 4) else { continue }
      return Entry(tag: found, type: type, count: n, valueField: at + 8)
    }
    return nil
  }

  /// The bytes an entry's value takes: in its value field when 4 or fewer, else where the field points
  /// (`base` added: a maker note's offsets count from the note's start).
  func bytes(of entry: Entry, base: Int = 0) -> UnsafeRawBufferPointer? {
    let size: Int
    switch entry.type {
    case 1, 2, 6, 7: size = entry.count  // BYTE, ASCII, SBYTE, UNDEFINED
    default: return nil
    }
    guard size >= 0, size <= data.count else { return nil }
    let start: Int
    if size <= 4 {
      start = entry.valueField
    } else {
      guard let offset = u32(entry.valueField) else { return nil }
      start = base + offset
    }
    guard start >= 0, start <= data.count - size else { return nil }
    return UnsafeRawBufferPointer(rebasing: data[start..<(start + size)])
  }
}
