/// What an image file declares in its header, read without decoding: the pixel size for the
/// `thumbs.originals` row, written as soon as a download lands, and a JPEG's frame for the memory cost
/// model. HEIF/AVIF are left to libheif.
public enum ImageProbe {
  /// The pixel size the header declares, for the formats whose table entry can read it
  /// (`FormatTraits.probeSize`); nil for the others and for a header too short or damaged.
  public static func pixelSize(_ bytes: [UInt8], format: ImageFormat) -> PixelSize? {
    format.traits.probeSize?(bytes)
  }

  /// IHDR is the first chunk: width and height big-endian at offsets 16 and 20, at most 2^31-1 by the
  /// spec (and the int columns of thumbs.originals), though 32 bits are stored.
  static func png(_ bytes: [UInt8]) -> PixelSize? {
    guard bytes.count >= 24, be32(bytes, 16) <= Int32.max, be32(bytes, 20) <= Int32.max else { return nil }
    return positive(Int(be32(bytes, 16)), Int(be32(bytes, 20)))
  }

  /// The logical screen's size, little-endian at offset 6.
  static func gif(_ bytes: [UInt8]) -> PixelSize? {
    guard bytes.count >= 10 else { return nil }
    return positive(Int(bytes[6]) | Int(bytes[7]) << 8, Int(bytes[8]) | Int(bytes[9]) << 8)
  }

  /// The first start-of-frame of a JPEG (SOF0...SOF15 but DHT, JPG and DAC): stored size, each
  /// component's sampling factors, progressive or not.
  public static func jpegFrame(_ bytes: [UInt8]) -> JPEGFrame? {
    var i = 2
    var adobeTransform: UInt8? = nil
    while i + 9 < bytes.count {
      guard bytes[i] == 0xFF else { return nil }
      let marker = bytes[i + 1]
      if marker == 0xFF {
        i += 1
        continue
      }
      if marker == 0xD8 || marker == 0x01 || (0xD0...0xD7).contains(marker) {
        i += 2
        continue
      }
      let length = Int(bytes[i + 2]) << 8 | Int(bytes[i + 3])
      if (0xC0...0xCF).contains(marker) && ![0xC4, 0xC8, 0xCC].contains(marker) {
        let height = Int(bytes[i + 5]) << 8 | Int(bytes[i + 6])
        let width = Int(bytes[i + 7]) << 8 | Int(bytes[i + 8])
        guard width > 0, height > 0 else { return nil }
        // SOF2, SOF6, SOF10 and SOF14 are the progressive processes.
        let progressive = [0xC2, 0xC6, 0xCA, 0xCE].contains(marker)
        let count = Int(bytes[i + 9])
        // Each component: id, sampling factors (high nibble horizontal), quantisation table.
        guard count > 0, i + 10 + 3 * count <= bytes.count else { return nil }
        let sampling = (0..<count).map { k in
          let factors = bytes[i + 11 + 3 * k]
          return JPEGFrame.Sampling(max(1, Int(factors >> 4)), max(1, Int(factors & 0x0F)))
        }
        var frame = JPEGFrame(
          size: PixelSize(width: width, height: height), sampling: sampling, progressive: progressive)
        // libjpeg's rule: the Adobe transform decides; without one, component ids 'R', 'G', 'B' mean RGB.
        let ids = (0..<count).map { bytes[i + 10 + 3 * $0] }
        frame.isRGB = count == 3 && (adobeTransform.map { $0 == 0 } ?? (ids == [0x52, 0x47, 0x42]))
        return frame
      }
      // APP14 "Adobe": version, two flag words, then the colour transform (0: none, i.e. RGB or CMYK).
      if marker == 0xEE, length >= 14, i + 4 + 12 <= bytes.count,
        bytes[(i + 4)..<(i + 9)].elementsEqual("Adobe".utf8)
      {
        adobeTransform = bytes[i + 4 + 11]
      }
      guard length >= 2 else { return nil }
      i += 2 + length
    }
    return nil
  }

  static func webp(_ bytes: [UInt8]) -> PixelSize? {
    guard bytes.count >= 30 else { return nil }
    let chunk = String(decoding: bytes[12..<16], as: UTF8.self)
    switch chunk {
    case "VP8 ":  // lossy: 14-bit sizes after the 3-byte frame tag and the start code
      return positive(Int(le16(bytes, 26)) & 0x3FFF, Int(le16(bytes, 28)) & 0x3FFF)
    case "VP8L":  // lossless: 14-bit width-1 and height-1 packed after the signature byte
      let b = (1...4).map { Int(bytes[20 + $0]) }
      return positive(1 + (b[0] | (b[1] & 0x3F) << 8), 1 + (b[1] >> 6 | b[2] << 2 | (b[3] & 0x0F) << 10))
    case "VP8X":  // extended: 24-bit canvas width-1 and height-1
      return positive(1 + le24(bytes, 24), 1 + le24(bytes, 27))
    default:
      return nil
    }
  }

  static func positive(_ width: Int, _ height: Int) -> PixelSize? {
    width > 0 && height > 0 ? PixelSize(width: width, height: height) : nil
  }

  static func be32(_ b: [UInt8], _ i: Int) -> UInt32 {
    UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3])
  }
  static func le16(_ b: [UInt8], _ i: Int) -> UInt16 { UInt16(b[i]) | UInt16(b[i + 1]) << 8 }
  static func le24(_ b: [UInt8], _ i: Int) -> Int { Int(b[i]) | Int(b[i + 1]) << 8 | Int(b[i + 2]) << 16 }
}
