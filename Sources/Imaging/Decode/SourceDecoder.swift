import ThumbCore

/// How an original describes its colours.
enum ColorDescription: Sendable {
  /// No description: taken as sRGB.
  case unspecified
  /// An embedded ICC profile.
  case icc([UInt8])
  /// HEIF/AVIF's nclx box: primaries and transfer curve by number.
  case nclx(ColorPrimaries, TransferCurve)
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
protocol SourceDecoder {
  var header: SourceHeader { get }
  /// Decodes at the smallest size that keeps `requiredScale` (output pixels per upright original pixel,
  /// the largest any variant needs) times `margin` (RenderPlanner.reductionMargin, or economicalMargin
  /// when memory is short). Blocks.
  func decode(requiredScale: Double, margin: Double) throws(JobError) -> DecodedSource
}

/// A copy of a file in memory that C decoders may point into for as long as they live (an Array's
/// storage is only guaranteed inside withUnsafeBytes).
final class OwnedBytes: @unchecked Sendable {
  let buffer: UnsafeMutableRawBufferPointer

  init(_ bytes: [UInt8]) {
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, bytes.count), alignment: 16)
    bytes.withUnsafeBytes { buffer.copyMemory(from: $0) }
    self.buffer = buffer
    count = bytes.count
  }

  let count: Int
  var pointer: UnsafeRawPointer { UnsafeRawPointer(buffer.baseAddress!) }

  deinit { buffer.deallocate() }
}

enum SourceDecoders {
  /// The decoder for `data`'s format, as sniffed from its bytes, with the header read and the pixel
  /// count checked against `maxPixels`.
  static func make(_ data: [UInt8], maxPixels: Int) throws(JobError) -> any SourceDecoder {
    guard let format = ImageFormat.sniff(data) else {
      throw JobError(.unsupportedFormat, "the bytes are not an image format thumbd knows")
    }
    let decoder: any SourceDecoder
    switch format {
    case .jpeg: decoder = try JPEGSource(data)
    case .heif, .avif: decoder = try HEIFSource(data, format: format, maxPixels: maxPixels)
    case .png: decoder = try PNGSource(data)
    case .webp: decoder = try WebPSource(data)
    case .video: decoder = try VideoSource(data, maxPixels: maxPixels)
    case .gif: decoder = try GIFSource(data, maxPixels: maxPixels)
    case .jxl: decoder = try JXLSource(data, maxPixels: maxPixels)
    case .tiff, .bmp:
      throw JobError(.unsupportedFormat, "\(format.rawValue) originals are not supported")
    }
    let size = decoder.header.storedSize
    guard size.pixels <= maxPixels else {
      throw JobError(.tooLarge, "\(size) is \(size.pixels) pixels, over the limit of \(maxPixels)")
    }
    return decoder
  }
}
