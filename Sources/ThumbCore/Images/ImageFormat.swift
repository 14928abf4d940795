/// Image formats, told apart by their first bytes: never by URL or Content-Type, which lie.
public enum ImageFormat: String, Sendable {
  case jpeg, png, webp, heif, avif, gif, tiff, bmp
  /// JPEG XL: a bare codestream or the ISO container.
  case jxl
  /// A video container (MP4, MOV, M4V, 3GP, Matroska, WebM): its poster frame is the picture.
  case video

  /// The format the bytes begin like, or nil when they look like no image we know.
  public static func sniff(_ bytes: [UInt8]) -> ImageFormat? {
    // A video read by ranges (RangedOriginal): its head tells.
    if RangedOriginal.isPacked(bytes) { return RangedOriginal.head(of: bytes).flatMap(sniff) }
    func starts(_ prefix: [UInt8], at offset: Int = 0) -> Bool {
      bytes.count >= offset + prefix.count && Array(bytes[offset..<(offset + prefix.count)]) == prefix
    }
    if starts([0xFF, 0xD8, 0xFF]) { return .jpeg }
    if starts([0xFF, 0x0A]) || starts([0, 0, 0, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A]) {
      return .jxl
    }
    if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
    if starts(Array("RIFF".utf8)) && starts(Array("WEBP".utf8), at: 8) { return .webp }
    if starts(Array("GIF87a".utf8)) || starts(Array("GIF89a".utf8)) { return .gif }
    if starts([0x49, 0x49, 0x2A, 0x00]) || starts([0x4D, 0x4D, 0x00, 0x2A]) { return .tiff }
    // "BM" claims the bytes even when too short to tell: a longer copy of them must not sniff otherwise.
    if starts(Array("BM".utf8)) { return bytes.count >= 26 ? .bmp : nil }
    if starts(Array("ftyp".utf8), at: 4) { return isobmff(bytes) }
    // Matroska and WebM: an EBML header.
    if starts([0x1A, 0x45, 0xDF, 0xA3]) { return .video }
    // QuickTime files older than `ftyp` begin with one of its top-level atoms.
    for atom in ["moov", "mdat", "wide", "free", "skip", "pnot"] where starts(Array(atom.utf8), at: 4) {
      return .video
    }
    return nil
  }

  /// Major or compatible brands of MP4, QuickTime, M4V, 3GPP and their relatives: a file branded so and
  /// not as HEIF or AVIF is a video. (Canon's `crx ` raw photos are ISO files too, and stay unknown.)
  static let videoBrands: Set<String> = [
    "isom", "iso2", "iso3", "iso4", "iso5", "iso6", "mp41", "mp42", "avc1", "qt  ", "M4V ", "M4VH", "M4VP",
    "3gp4", "3gp5", "3gp6", "3gp7", "3g2a", "3g2b", "3g2c", "mmp4", "MSNV", "dash", "f4v ", "XAVC", "hvc1",
  ]

  static let avifBrands: Set<String> = ["avif", "avis"]
  static let heifBrands: Set<String> = ["heic", "heix", "hevc", "hevx", "heim", "heis", "mif1", "msf1"]

  /// An ISO base media file (HEIF, AVIF, but also MP4): its `ftyp` box names a major brand and a list of
  /// compatible ones. HEIF files are not always branded `heic` first (some writers put a generic or
  /// vendor brand there and `mif1` among the compatible ones), so the whole list is read: the major
  /// brand decides when it is known, else the first HEIF or AVIF brand of the list. Only a complete box
  /// is read, so more bytes never change the answer.
  static func isobmff(_ bytes: [UInt8]) -> ImageFormat? {
    guard bytes.count >= 16 else { return nil }
    let boxSize = Int(bytes[0]) << 24 | Int(bytes[1]) << 16 | Int(bytes[2]) << 8 | Int(bytes[3])
    guard boxSize >= 16, boxSize <= 4096, bytes.count >= boxSize else { return nil }
    let brands = ([8] + Array(stride(from: 16, through: boxSize - 4, by: 4))).map {
      String(decoding: bytes[$0..<($0 + 4)], as: UTF8.self)
    }
    for brand in brands {
      if avifBrands.contains(brand) { return .avif }
      if heifBrands.contains(brand) { return .heif }
    }
    if brands.contains(where: videoBrands.contains) { return .video }
    return nil
  }
}
