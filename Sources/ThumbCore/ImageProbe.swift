/// The pixel size an image file declares in its header, read without decoding: for the
/// `thumbs.originals` row, written as soon as a download lands. HEIF/AVIF are left to libheif.
public enum ImageProbe {
  public static func pixelSize(_ bytes: [UInt8], format: ImageFormat) -> PixelSize? {
    switch format {
    case .jpeg: return jpeg(bytes)
    case .png:
      // IHDR is the first chunk: width and height big-endian at offsets 16 and 20.
      guard bytes.count >= 24 else { return nil }
      return positive(Int(be32(bytes, 16)), Int(be32(bytes, 20)))
    case .gif:
      guard bytes.count >= 10 else { return nil }
      return positive(Int(bytes[6]) | Int(bytes[7]) << 8, Int(bytes[8]) | Int(bytes[9]) << 8)
    case .webp: return webp(bytes)
    default: return nil
    }
  }

  /// The first start-of-frame's size (SOF0...SOF15 but DHT, JPG and DAC): see `jpegFrame`.
  static func jpeg(_ bytes: [UInt8]) -> PixelSize? { jpegFrame(bytes)?.size }

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
