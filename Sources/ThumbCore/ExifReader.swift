/// Finds the EXIF Orientation of a JPEG without any library: walks the marker segments up to the first
/// scan, finds the APP1 "Exif" segment, and reads IFD0 of its TIFF structure. Every read is bounds-checked,
/// since the bytes come from strangers; anything malformed means "no orientation" (upright), never a crash.
public enum ExifReader {
  public static func jpegOrientation(_ bytes: [UInt8]) -> Orientation? {
    bytes.withUnsafeBufferPointer { jpegOrientation(UnsafeRawBufferPointer($0)) }
  }

  public static func jpegOrientation(_ data: UnsafeRawBufferPointer) -> Orientation? {
    guard data.count >= 4, data[0] == 0xFF, data[1] == 0xD8 else { return nil }
    var pos = 2
    while pos + 4 <= data.count {
      guard data[pos] == 0xFF else { return nil }
      let marker = data[pos + 1]
      if marker == 0xFF {  // fill byte before a marker
        pos += 1
        continue
      }
      // Markers without a length: TEM and RSTn; SOS and EOI end the header.
      if marker == 0x01 || (0xD0...0xD7).contains(marker) {
        pos += 2
        continue
      }
      if marker == 0xDA || marker == 0xD9 { return nil }
      let length = Int(data[pos + 2]) << 8 | Int(data[pos + 3])
      guard length >= 2, pos + 2 + length <= data.count else { return nil }
      let payload = pos + 4
      let payloadLength = length - 2
      if marker == 0xE1, payloadLength >= 6,
        data[payload] == 0x45, data[payload + 1] == 0x78, data[payload + 2] == 0x69,
        data[payload + 3] == 0x66, data[payload + 4] == 0, data[payload + 5] == 0
      {
        let tiff = UnsafeRawBufferPointer(rebasing: data[(payload + 6)..<(payload + payloadLength)])
        if let orientation = tiffOrientation(tiff) { return orientation }
      }
      pos += 2 + length
    }
    return nil
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
