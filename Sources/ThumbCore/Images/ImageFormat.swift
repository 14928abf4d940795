/// Image formats, told apart by their first bytes: never by URL or Content-Type, which lie.
public enum ImageFormat: String, Sendable, CaseIterable {
  case jpeg, png, webp, heif, avif, gif, tiff, bmp
  /// JPEG XL: a bare codestream or the ISO container.
  case jxl
  /// A video container (MP4, MOV, M4V, 3GP, Matroska, WebM): its poster frame is the picture.
  case video

  /// What thumbd knows of the format (`MediaFormats.table`).
  public var traits: FormatTraits { MediaFormats.traits[self]! }
  /// Whether thumbd decodes it (otherwise it is recognised and refused, `unsupported_format`).
  public var decodes: Bool { traits.decodes }
  /// Whether a large file of it is read in parts (by ranges from the origin, or from the spool).
  public var readsByRanges: Bool { traits.readsByRanges }
  /// Whether a file of it may hold several frames (animated variants).
  public var animates: Bool { traits.animates }

  /// The format the bytes begin like, or nil when they look like no image we know.
  public static func sniff(_ bytes: [UInt8]) -> ImageFormat? {
    for traits in MediaFormats.table {
      for signature in traits.signatures where signature.matches(bytes) {
        // A signature short enough to begin other files claims the bytes even when too few to tell:
        // a longer copy of them must not sniff otherwise.
        return bytes.count >= traits.minimumBytes ? traits.format : nil
      }
    }
    if bytes.count >= 8, bytes[4..<8].elementsEqual("ftyp".utf8) { return isobmff(bytes) }
    return nil
  }

  /// An ISO base media file (HEIF, AVIF, but also MP4): its `ftyp` box names a major brand and a list of
  /// compatible ones. HEIF files are not always branded `heic` first (some writers put a generic or
  /// vendor brand there and `mif1` among the compatible ones), so the whole list is read: the major
  /// brand decides when it is known, else the first image brand of the list, else any video brand.
  /// Only a complete box is read, so more bytes never change the answer.
  static func isobmff(_ bytes: [UInt8]) -> ImageFormat? {
    guard bytes.count >= 16 else { return nil }
    let boxSize = Int(bytes[0]) << 24 | Int(bytes[1]) << 16 | Int(bytes[2]) << 8 | Int(bytes[3])
    guard boxSize >= 16, boxSize <= 4096, bytes.count >= boxSize else { return nil }
    let brands = ([8] + Array(stride(from: 16, through: boxSize - 4, by: 4))).map {
      String(decoding: bytes[$0..<($0 + 4)], as: UTF8.self)
    }
    for brand in brands {
      if let image = MediaFormats.brandedImages.first(where: { $0.brands.contains(brand) }) {
        return image.format
      }
    }
    return MediaFormats.brandedOthers.first { !$0.brands.isDisjoint(with: brands) }?.format
  }
}

/// Bytes a format's files begin with: one run or more, each at its offset, all present.
public struct Signature: Sendable {
  public var runs: [(offset: Int, bytes: [UInt8])]

  public init(_ bytes: [UInt8], at offset: Int = 0) { runs = [(offset, bytes)] }

  public init(_ text: String, at offset: Int = 0) { self.init(Array(text.utf8), at: offset) }

  /// This signature and `text` at `offset` too.
  public func and(_ text: String, at offset: Int) -> Signature {
    var both = self
    both.runs.append((offset, Array(text.utf8)))
    return both
  }

  func matches(_ data: [UInt8]) -> Bool {
    runs.allSatisfy { run in
      data.count >= run.offset + run.bytes.count
        && data[run.offset..<(run.offset + run.bytes.count)].elementsEqual(run.bytes)
    }
  }
}

/// What thumbd knows of one format: how it is sniffed, how it is decoded and what that costs, whether
/// it is read by ranges, whether it animates, how its header gives its size.
public struct FormatTraits: Sendable {
  public var format: ImageFormat
  /// Leading bytes that identify it (ISO files are identified by `brands` instead).
  public var signatures: [Signature] = []
  /// A matching signature needs this many bytes to claim the file.
  public var minimumBytes = 0
  /// ISO base media `ftyp` brands that mark it.
  public var brands: Set<String> = []
  /// One of its brands anywhere in the `ftyp` list decides (images, whose files also carry generic
  /// brands); otherwise its brands count only when no image brand is there.
  public var brandsDecideAlone = false
  /// How it is decoded and what that holds beside the file and the decoded planes (MemoryCostModel);
  /// nil: recognised, and refused as `unsupported_format`. Its decoder, in Imaging, names the formats it
  /// reads (`SourceDecoders`), and a test holds the two together.
  public var decoding: DecodeCost?
  /// A large file is read in parts: its head, its index, the keyframes a poster needs (by ranges from
  /// an origin that answers them, else from the spool).
  public var readsByRanges = false
  /// URL path extensions that say, before any byte arrives, that a file is best read by ranges.
  public var rangeExtensions: [String] = []
  /// May hold several frames, made into animated variants.
  public var animates = false
  /// The pixel size its header declares, read without a decoder (the originals row is written as soon
  /// as a download lands).
  public var probeSize: (@Sendable ([UInt8]) -> PixelSize?)? = nil

  public var decodes: Bool { decoding != nil }
}

/// What a format's decode holds beyond the file's copy and the decoded planes, per pixel of the picture
/// (MemoryCostModel, whose figures `thumbd bench memory` checks against measured peaks).
public enum DecodeCost: Sendable, Equatable {
  /// libjpeg-turbo: its own model (coefficients of a progressive file, scaled decoding).
  case jpeg
  /// A video's decoder: its pictures by codec, size and depth (MemoryCostModel.video).
  case video
  /// Decoded to interleaved samples, then split into planes. The codec holds `perPixel` bytes a pixel
  /// of its coded picture (`withAlpha` when there is alpha) and `perRow` bytes a row. `reduces`: it
  /// decodes at a reduced size when the variants allow. `wholeImageOnly`: the codec's buffer is there
  /// only when the decoder says the file is coded as a whole image (lossless WebP; lossy works row by
  /// row).
  case interleaved(
    perPixel: Int, withAlpha: Int, perRow: Int = 0, reduces: Bool = false, wholeImageOnly: Bool = false)
}

/// The formats thumbd knows: the one table that lists them, in the order the sniffer tries them.
public enum MediaFormats {
  public static let table: [FormatTraits] = [
    FormatTraits(
      format: .jpeg, signatures: [Signature([0xFF, 0xD8, 0xFF])], decoding: .jpeg,
      probeSize: { ImageProbe.jpegFrame($0)?.size }),
    FormatTraits(
      format: .jxl,
      signatures: [
        Signature([0xFF, 0x0A]), Signature([0, 0, 0, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A]),
      ],
      // libjxl decodes into planes of 32-bit floats (three, four with alpha) before converting them to
      // the output's samples.
      decoding: .interleaved(perPixel: 12, withAlpha: 16)),
    FormatTraits(
      format: .png, signatures: [Signature([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])],
      // libspng decodes row by row into the interleaved picture: no buffer of its own to speak of.
      decoding: .interleaved(perPixel: 0, withAlpha: 0), probeSize: ImageProbe.png),
    FormatTraits(
      format: .webp, signatures: [Signature("RIFF").and("WEBP", at: 8)],
      // Lossless WebP decodes to a whole-image ARGB buffer first; lossy works row by row, and libwebp
      // scales as it decodes.
      decoding: .interleaved(perPixel: 4, withAlpha: 4, reduces: true, wholeImageOnly: true), animates: true,
      probeSize: ImageProbe.webp),
    FormatTraits(
      format: .gif, signatures: [Signature("GIF87a"), Signature("GIF89a")],
      // The canvas kept before a frame that asks to be undone ("restore to previous"), the canvas's
      // alpha even when the GIF is opaque (it is composited as RGBA), and a row.
      decoding: .interleaved(perPixel: 5, withAlpha: 5, perRow: 1), animates: true, probeSize: ImageProbe.gif),
    FormatTraits(
      format: .tiff,
      signatures: [Signature([0x49, 0x49, 0x2A, 0x00]), Signature([0x4D, 0x4D, 0x00, 0x2A])],
      decoding: nil),
    FormatTraits(format: .bmp, signatures: [Signature("BM")], minimumBytes: 26, decoding: nil),
    // The codec's picture at its coded size (before cropping), YCbCr 4:2:0 at up to two bytes a sample
    // (10-bit), plus alpha.
    FormatTraits(
      format: .avif, brands: ["avif", "avis"], brandsDecideAlone: true,
      decoding: .interleaved(perPixel: 3, withAlpha: 5)),
    FormatTraits(
      format: .heif, brands: ["heic", "heix", "hevc", "hevx", "heim", "heis", "mif1", "msf1"],
      brandsDecideAlone: true, decoding: .interleaved(perPixel: 3, withAlpha: 5)),
    FormatTraits(
      format: .video,
      // Matroska and WebM (an EBML header); QuickTime files older than `ftyp` begin with one of its
      // top-level atoms.
      signatures: [Signature([0x1A, 0x45, 0xDF, 0xA3])]
        + ["moov", "mdat", "wide", "free", "skip", "pnot"].map { Signature($0, at: 4) },
      // MP4, QuickTime, M4V, 3GPP and their relatives: a file branded so and not as HEIF or AVIF. (Canon's
      // `crx ` raw photos are ISO files too, and stay unknown.)
      brands: [
        "isom", "iso2", "iso3", "iso4", "iso5", "iso6", "mp41", "mp42", "avc1", "qt  ", "M4V ", "M4VH",
        "M4VP", "3gp4", "3gp5", "3gp6", "3gp7", "3g2a", "3g2b", "3g2c", "mmp4", "MSNV", "dash", "f4v ",
        "XAVC", "hvc1",
      ],
      decoding: .video, readsByRanges: true, rangeExtensions: ["mp4", "mov", "m4v", "3gp", "3g2"]),
  ]

  /// The formats whose `ftyp` brand decides wherever it stands in the list, and the other branded
  /// ones (ImageFormat.isobmff), once.
  static let brandedImages = table.filter { $0.brandsDecideAlone }
  static let brandedOthers = table.filter { !$0.brandsDecideAlone && !$0.brands.isEmpty }

  /// The table by format.
  static let traits: [ImageFormat: FormatTraits] = Dictionary(
    uniqueKeysWithValues: table.map { ($0.format, $0) })
}
