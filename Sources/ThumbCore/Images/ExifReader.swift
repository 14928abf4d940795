/// Finds the EXIF Orientation of a JPEG without any library: walks the marker segments up to the first
/// scan (JPEGSegments), finds the APP1 "Exif" segment, and reads IFD0 of its TIFF structure. Every read is
/// bounds-checked, since the bytes come from strangers; anything malformed means "no orientation"
/// (upright), never a crash.
public enum ExifReader {
  public static func jpegOrientation(_ bytes: [UInt8]) -> Orientation? {
    bytes.withUnsafeBufferPointer { jpegOrientation(UnsafeRawBufferPointer($0)) }
  }

  public static func jpegOrientation(_ data: UnsafeRawBufferPointer) -> Orientation? {
    var found: Orientation?
    JPEGSegments.forEach(data) { marker, payload in
      if marker == 0xE1, payload.count >= 6, payload.prefix(6).elementsEqual([0x45, 0x78, 0x69, 0x66, 0, 0]) {
        found = tiffOrientation(UnsafeRawBufferPointer(rebasing: payload[6...]))
      }
      return found == nil
    }
    return found
  }

  /// Orientation from a TIFF structure (the body of an EXIF block, also what HEIF's Exif item holds).
  public static func tiffOrientation(_ tiff: UnsafeRawBufferPointer) -> Orientation? {
    guard tiff.count >= 8 else { return nil }
    let littleEndian: Bool
    switch (tiff[0], tiff[1]) {
    case (0x49, 0x49): littleEndian = true
    case (0x4D, 0x4D): littleEndian = false
    default: return nil
    }
    func u16(_ at: Int) -> Int? {
      guard at >= 0, at + 2 <= tiff.count else { return nil }
      let a = Int(tiff[at])
      let b = Int(tiff[at + 1])
      return littleEndian ? a | b << 8 : a << 8 | b
    }
    func u32(_ at: Int) -> Int? {
      guard let lo = u16(littleEndian ? at : at + 2), let hi = u16(littleEndian ? at + 2 : at) else {
        return nil
      }
      return hi << 16 | lo
    }
    guard u16(2) == 42, let ifd = u32(4), let count = u16(ifd) else { return nil }
    for entry in 0..<count {
      let at = ifd + 2 + entry * 12
      guard let tag = u16(at) else { return nil }
      guard tag == 0x0112 else { continue }
      // Type SHORT (3), count 1: the value sits in the first two bytes of the value field.
      guard u16(at + 2) == 3, let value = u16(at + 8) else { return nil }
      return Orientation(rawValue: value)
    }
    return nil
  }
}
