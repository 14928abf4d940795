/// Image formats, told apart by their first bytes: never by URL or Content-Type, which lie.
public enum ImageFormat: String, Sendable {
  case jpeg, png, webp, heif, avif, gif, tiff, bmp

  /// The format the bytes begin like, or nil when they look like no image we know.
  public static func sniff(_ bytes: [UInt8]) -> ImageFormat? {
    func starts(_ prefix: [UInt8], at offset: Int = 0) -> Bool {
      bytes.count >= offset + prefix.count && Array(bytes[offset..<(offset + prefix.count)]) == prefix
    }
    if starts([0xFF, 0xD8, 0xFF]) { return .jpeg }
    if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
    if starts(Array("RIFF".utf8)) && starts(Array("WEBP".utf8), at: 8) { return .webp }
    if starts(Array("GIF87a".utf8)) || starts(Array("GIF89a".utf8)) { return .gif }
    if starts([0x49, 0x49, 0x2A, 0x00]) || starts([0x4D, 0x4D, 0x00, 0x2A]) { return .tiff }
    if starts(Array("BM".utf8)) && bytes.count >= 26 { return .bmp }
    if starts(Array("ftyp".utf8), at: 4) && bytes.count >= 12 {
      let brand = String(decoding: bytes[8..<12], as: UTF8.self)
      switch brand {
      case "avif", "avis": return .avif
      case "heic", "heix", "hevc", "hevx", "heim", "heis", "mif1", "msf1": return .heif
      default: return nil
      }
    }
    return nil
  }
}
