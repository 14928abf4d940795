/// The marker segments of a JPEG header, walked without a library up to the first scan. Every read is
/// bounds-checked: the bytes come from strangers, and anything malformed ends the walk.
public enum JPEGSegments {
  /// Calls `body` with each segment's marker and payload (after the length), until the first scan, the
  /// end, a malformed segment, or `body` returning false. `throughScans`: on past each scan too (SOS
  /// segments included), its entropy-coded data skipped up to the next marker (in that data a 0xFF is
  /// followed by a stuffed 0 or a restart marker, so anything else is a marker).
  public static func forEach(
    _ data: UnsafeRawBufferPointer, throughScans: Bool = false,
    _ body: (UInt8, UnsafeRawBufferPointer) -> Bool
  ) {
    guard data.count >= 4, data[0] == 0xFF, data[1] == 0xD8 else { return }
    var pos = 2
    while pos + 4 <= data.count {
      guard data[pos] == 0xFF else { return }
      let marker = data[pos + 1]
      if marker == 0xFF {  // fill byte before a marker
        pos += 1
        continue
      }
      if marker == 0x01 || (0xD0...0xD7).contains(marker) {  // TEM and RSTn carry no length
        pos += 2
        continue
      }
      if marker == 0xD9 || (marker == 0xDA && !throughScans) { return }  // EOI, or SOS: the header is over
      let length = Int(data[pos + 2]) << 8 | Int(data[pos + 3])
      guard length >= 2, pos + 2 + length <= data.count else { return }
      let payload = UnsafeRawBufferPointer(rebasing: data[(pos + 4)..<(pos + 2 + length)])
      if !body(marker, payload) { return }
      pos += 2 + length
      if marker == 0xDA {
        while pos + 1 < data.count,
          !(data[pos] == 0xFF && data[pos + 1] != 0 && !(0xD0...0xD7).contains(data[pos + 1]))
        {
          pos += 1
        }
      }
    }
  }

  /// The picture's scans (SOS segments): one for a baseline file, several for a progressive or
  /// non-interleaved one. An embedded EXIF thumbnail, a JPEG inside APP1, is skipped with its segment.
  public static func scanCount(_ data: UnsafeRawBufferPointer) -> Int {
    var count = 0
    forEach(data, throughScans: true) { marker, _ in
      if marker == 0xDA { count += 1 }
      return true
    }
    return count
  }

  /// The embedded ICC profile: APP2 segments tagged "ICC_PROFILE\0", each with its sequence number and
  /// the total count, joined in sequence order. Nil when absent, or when a chunk is missing or repeated
  /// (a partial profile would be worse than none).
  public static func iccProfile(_ data: UnsafeRawBufferPointer) -> [UInt8]? {
    let tag = Array("ICC_PROFILE".utf8) + [0]
    var chunks: [Int: [UInt8]] = [:]
    var total = 0
    var valid = true
    forEach(data) { marker, payload in
      guard marker == 0xE2, payload.count > tag.count + 2, payload.prefix(tag.count).elementsEqual(tag)
      else { return true }
      let sequence = Int(payload[tag.count])
      let count = Int(payload[tag.count + 1])
      if sequence < 1 || sequence > count || (total != 0 && count != total) || chunks[sequence] != nil {
        valid = false
        return false
      }
      total = count
      chunks[sequence] = Array(payload[(tag.count + 2)...])
      return true
    }
    guard valid, total > 0, chunks.count == total else { return nil }
    return (1...total).flatMap { chunks[$0]! }
  }

  public static func iccProfile(_ bytes: [UInt8]) -> [UInt8]? {
    bytes.withUnsafeBytes { iccProfile($0) }
  }
}
