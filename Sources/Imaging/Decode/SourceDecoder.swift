import ThumbCore

/// How an original describes its colours.
enum ColorDescription: Sendable {
  /// No description: taken as sRGB.
  case unspecified
  /// An embedded ICC profile.
  case icc([UInt8])
  /// HEIF/AVIF's nclx box: primaries and transfer curve by number.
  case nclx(ColorPrimaries, TransferCurve)
  /// PQ or HLG (HEIF and AVIF, JPEG XL, video): decoded deep and made SDR as it is decoded
  /// (`HDRSignal.toSDR`), so the decoded planes are sRGB.
  case hdr(HDRSignal)
}

/// What is known about an original once its header is read, before anything large is allocated.
struct SourceHeader: Sendable {
  var format: ImageFormat
  /// The size `decode` produces at full scale, before `orientation` is applied.
  var storedSize: PixelSize
  /// The turn thumbd must still apply. HEIF is `.up`: libheif applies the file's own transforms
  /// (irot, imir) as it decodes, and its EXIF orientation must not be applied a second time.
  var orientation: Orientation
  var hasAlpha: Bool
  var color: ColorDescription

  var uprightSize: PixelSize { orientation.uprightSize(of: storedSize) }
}

/// A decoded original: planes in stored orientation, possibly reduced on load.
struct DecodedSource {
  var image: PlanarImage
  /// How the decode was reduced, for logs and `thumbd thumbnail --verbose`: "1/4", "thumbnail 512x384".
  var reduction: String
  /// The JPEG DCT scale denominator (1 for the other formats).
  var denominator = 1
  /// What the job's row and event should say about the original (a JPEG cut short).
  var warnings: [RenderWarning] = []
  /// The planes' colours when the decode changed them from the header's (an HDR picture tone-mapped
  /// to sRGB); nil when they are as the header says.
  var color: ColorDescription?
}

/// One format's decoder, holding the file. `header` is read at creation; `decode` allocates the pixels.
/// What the pipeline needs of a format it asks here, never of a decoder's type.
protocol SourceDecoder {
  var header: SourceHeader { get }
  /// Decodes at the smallest size that keeps `requiredScale` (output pixels per upright original pixel,
  /// the largest any variant needs) times `margin` (RenderPlanner.reductionMargin, or economicalMargin
  /// when memory is short). Blocks.
  func decode(requiredScale: Double, margin: Double) throws(JobError) -> DecodedSource
  /// The peak memory a decode with `margin` and the render of `variants` are predicted to take, from
  /// the header alone (MemoryCostModel): an upper bound. `fileBytes`: the bytes of the file held.
  func estimate(variants: [VariantSpec], margin: Double, fileBytes: Int) -> MemoryEstimate
  /// What the job's row and event say of the original beyond its format and size (a video's facts);
  /// nil for a photo.
  var media: MediaInfo? { get }
  /// Its frames, when it holds an animation of more than one (nil: a still).
  var animation: (any AnimatedSource)? { get }
  /// How the next `decode` picks a poster, for an original whose picture is one of many (a video): at
  /// or before `at` seconds (nil: PosterChoice's rule); `asking`, a search that may stop for keyframes
  /// it does not hold (nil: they are passed over), resumed where it stopped unless it is `.start`.
  func searchPoster(at: Double?, asking: PosterSearch?)
  /// The keyframes the last `decode` stopped for, and the search to resume (nil: it decoded its
  /// picture).
  var keyframesWanted: ([Range<Int>], PosterSearch)? { get }
}

extension SourceDecoder {
  var media: MediaInfo? { nil }
  var animation: (any AnimatedSource)? { nil }
  func searchPoster(at: Double?, asking: PosterSearch?) {}
  var keyframesWanted: ([Range<Int>], PosterSearch)? { nil }

  func estimate(variants: [VariantSpec], margin: Double, fileBytes: Int) -> MemoryEstimate {
    interleavedEstimate(variants: variants, margin: margin, fileBytes: fileBytes)
  }

  /// MemoryCostModel.interleavedDecode for this decoder's header, with what the decoder knows of its
  /// codec's buffers.
  func interleavedEstimate(
    variants: [VariantSpec], margin: Double, fileBytes: Int, wholeImageCodec: Bool = true,
    coded: PixelSize? = nil, composedFrame: PixelSize? = nil
  ) -> MemoryEstimate {
    MemoryCostModel.interleavedDecode(
      format: header.format, stored: header.storedSize, orientation: header.orientation,
      hasAlpha: header.hasAlpha, compressedBytes: fileBytes, variants: variants,
      wholeImageCodec: wholeImageCodec, margin: margin, coded: coded, composedFrame: composedFrame,
      frames: animation?.frameCount ?? 1, deep: header.color.hdr != nil)
  }
}

/// A copy of a file in memory that C decoders may point into for as long as they live (an Array's
/// storage is only guaranteed inside withUnsafeBytes).
final class OwnedBytes: @unchecked Sendable {
  let buffer: UnsafeMutableRawBufferPointer

  convenience init(_ bytes: [UInt8]) {
    self.init(joining: [bytes])
  }

  /// Several arrays one after another (a video's parts).
  init(joining pieces: [[UInt8]]) {
    count = pieces.reduce(0) { $0 + $1.count }
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, count), alignment: 16)
    var at = 0
    for piece in pieces {
      piece.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: buffer[at...]).copyMemory(from: $0) }
      at += piece.count
    }
    self.buffer = buffer
  }

  let count: Int
  var pointer: UnsafeRawPointer { UnsafeRawPointer(buffer.baseAddress!) }

  deinit { buffer.deallocate() }
}

/// A decoder the pipeline finds by format: it names the formats of `MediaFormats.table` it reads, and
/// opens a file of one of them.
protocol FormatDecoder: SourceDecoder {
  static var formats: Set<ImageFormat> { get }
  /// Reads the header of `original`, of `format` (one of `formats`, as sniffed).
  static func open(_ original: OriginalBytes, format: ImageFormat, maxPixels: Int) throws(JobError) -> Self
}

extension OriginalBytes {
  /// The whole file, for a decoder that reads nothing in parts.
  func wholeFile(of format: ImageFormat) throws(JobError) -> [UInt8] {
    guard let data = whole else {
      throw JobError(.internalError, "a \(format.rawValue) original was read in parts")
    }
    return data
  }
}

enum SourceDecoders {
  /// Every decoder. Which formats each reads it says itself; the format table says which formats are
  /// decoded at all (a test holds the two together).
  static var all: [any FormatDecoder.Type] {
    [
      JPEGSource.self, HEIFSource.self, PNGSource.self, WebPSource.self, GIFSource.self, JXLSource.self,
      VideoSource.self,
    ]
  }

  /// The decoder of `format`, nil for none.
  static func decoder(for format: ImageFormat) -> (any FormatDecoder.Type)? {
    all.first { $0.formats.contains(format) }
  }

  /// The decoder for the original's format, as sniffed from its bytes, with the header read and the
  /// pixel count checked against `maxPixels`.
  static func make(_ original: OriginalBytes, maxPixels: Int) throws(JobError) -> any SourceDecoder {
    guard let format = original.format else {
      throw JobError(.unsupportedFormat, "the bytes are not an image format thumbd knows")
    }
    guard format.decodes, let decoder = decoder(for: format) else {
      throw JobError(.unsupportedFormat, "\(format.rawValue) originals are not supported")
    }
    if original.whole == nil, !format.readsByRanges {
      throw JobError(.internalError, "a \(format.rawValue) original was read in parts")
    }
    return try checked(decoder.open(original, format: format, maxPixels: maxPixels), maxPixels: maxPixels)
  }

  /// The decoder for a whole file.
  static func make(_ data: [UInt8], maxPixels: Int) throws(JobError) -> any SourceDecoder {
    try make(.whole(data), maxPixels: maxPixels)
  }

  private static func checked(
    _ decoder: any SourceDecoder, maxPixels: Int
  ) throws(JobError) -> any SourceDecoder {
    let size = decoder.header.storedSize
    guard size.pixels <= maxPixels else {
      throw JobError(.tooLarge, "\(size) is \(size.pixels) pixels, over the limit of \(maxPixels)")
    }
    return decoder
  }
}
