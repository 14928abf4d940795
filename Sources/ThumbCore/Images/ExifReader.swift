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
    jpegTIFF(data) { tiff in
      found = tiffOrientation(tiff)
      return found == nil
    }
    return found
  }

  /// Calls `body` with the TIFF structure of each of a JPEG's APP1 "Exif" segments while it returns true.
  static func jpegTIFF(_ data: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Bool) {
    JPEGSegments.forEach(data) { marker, payload in
      if marker == 0xE1, payload.count >= 6, payload.prefix(6).elementsEqual([0x45, 0x78, 0x69, 0x66, 0, 0]) {
        return body(UnsafeRawBufferPointer(rebasing: payload[6...]))
      }
      return true
    }
  }

  /// Orientation from a TIFF structure (the body of an EXIF block, also what HEIF's Exif item holds).
  public static func tiffOrientation(_ tiff: UnsafeRawBufferPointer) -> Orientation? {
    guard let view = TIFFView(tiff: tiff), let ifd = view.firstDirectory,
      let entry = view.entry(0x0112, inDirectoryAt: ifd),
      // Type SHORT (3), count 1: the value sits in the first two bytes of the value field.
      entry.type == 3, let value = view.u16(entry.valueField)
    else { return nil }
    return Orientation(rawValue: value)
  }
}
