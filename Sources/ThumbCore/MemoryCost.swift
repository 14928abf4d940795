/// What a JPEG's frame header says, enough to predict the memory its decode needs.
public struct JPEGFrame: Sendable, Equatable {
  /// As stored, before EXIF orientation.
  public var size: PixelSize
  /// Each component's horizontal and vertical sampling factor (4:2:0 is [2x2, 1x1, 1x1]).
  public var sampling: [Sampling]
  /// SOF2 (and the other progressive SOFs): libjpeg must buffer every coefficient of the full-size image.
  public var progressive: Bool

  public struct Sampling: Sendable, Equatable {
    public var horizontal: Int
    public var vertical: Int

    public init(_ horizontal: Int, _ vertical: Int) {
      self.horizontal = horizontal
      self.vertical = vertical
    }
  }

  public init(size: PixelSize, sampling: [Sampling], progressive: Bool) {
    self.size = size
    self.sampling = sampling
    self.progressive = progressive
  }

  public var components: Int { sampling.count }

  /// 8x8 coefficient blocks libjpeg keeps for the whole image: per component, its subsampled size in
  /// blocks, padded to whole MCUs (libjpeg's width_in_blocks rounded up to the sampling factor).
  public var coefficientBlocks: Int {
    let maxH = sampling.map(\.horizontal).max() ?? 1
    let maxV = sampling.map(\.vertical).max() ?? 1
    let mcuColumns = (size.width + 8 * maxH - 1) / (8 * maxH)
    let mcuRows = (size.height + 8 * maxV - 1) / (8 * maxV)
    return sampling.map { mcuColumns * $0.horizontal * mcuRows * $0.vertical }.reduce(0, +)
  }
}

/// The peak bytes one job is predicted to hold while it decodes and renders, by part. Upper bounds, from
/// the header alone: the admission gate reserves `total` before the decode starts.
///
/// The parts are not all alive at once. Decoding holds the file, the coefficients (progressive files),
/// the decoded planes and, for files decoded interleaved first (CMYK), that buffer too; rendering holds
/// the planes and the variants. The peak is the larger of the two phases, plus `margin` for the
/// allocator. Orientation costs nothing here: it is applied to the outputs, not to the decode.
public struct MemoryEstimate: Sendable, Equatable, CustomStringConvertible {
  /// The downloaded file, held for the whole job.
  public var compressed = 0
  /// libjpeg's whole-image coefficient buffer (progressive files only), at full size whatever the scale.
  public var coefficients = 0
  /// Other decoders' own whole-image buffers: libheif's YCbCr picture, libwebp's lossless ARGB.
  public var codec = 0
  /// The decoded planes at the chosen scale.
  public var decoded = 0
  /// An interleaved decode buffer split into the planes afterwards (CMYK JPEG, PNG, WebP, HEIF).
  public var interleaved = 0
  /// Every variant's planes (kept while later variants read them) and encoded bytes.
  public var rendering = 0

  /// Allocator and bookkeeping overhead, a fraction of the rest (measured peaks ran up to 0.98 of the
  /// prediction without it).
  public static let margin = 0.10

  public var total: Int {
    let peak = compressed + max(coefficients + codec + decoded + interleaved, decoded + rendering)
    return peak + Int(Double(peak) * Self.margin)
  }

  public var description: String {
    "\(ByteSize.format(total)) (file \(ByteSize.format(compressed)), coefficients \(ByteSize.format(coefficients)), "
      + "codec \(ByteSize.format(codec)), pixels \(ByteSize.format(decoded + interleaved)), "
      + "rendering \(ByteSize.format(rendering)))"
  }
}

/// Predicts a job's peak memory from the header, for admission under `--memory-budget`.
public enum MemoryCostModel {
  public static func jpeg(
    frame: JPEGFrame, compressedBytes: Int, orientation: Orientation, variants: [VariantSpec],
    margin: Double = RenderPlanner.reductionMargin
  ) -> MemoryEstimate {
    var estimate = MemoryEstimate()
    estimate.compressed = compressedBytes
    if frame.progressive {
      // 64 two-byte coefficients per block (libjpeg's JCOEF is a short).
      estimate.coefficients = frame.coefficientBlocks * 64 * 2
    }
    let upright = orientation.uprightSize(of: frame.size)
    let denominator = RenderPlanner.decodeDenominator(source: upright, variants: variants, margin: margin)
    let scaled = PixelSize(
      width: (frame.size.width + denominator - 1) / denominator,
      height: (frame.size.height + denominator - 1) / denominator)
    if frame.components == 4 {
      // CMYK: decoded interleaved, then split into four planes.
      estimate.interleaved = scaled.pixels * 4
      estimate.decoded = scaled.pixels * 4
    } else {
      // YCbCr (or grey) planes straight from the IDCT, each padded to whole MCUs.
      let maxH = frame.sampling.map(\.horizontal).max() ?? 1
      let maxV = frame.sampling.map(\.vertical).max() ?? 1
      let paddedW = (scaled.width + maxH - 1) / maxH * maxH
      let paddedH = (scaled.height + maxV - 1) / maxV * maxV
      estimate.decoded = frame.sampling.map {
        paddedW * $0.horizontal / maxH * (paddedH * $0.vertical / maxV)
      }.reduce(0, +)
    }
    estimate.rendering = renderingBytes(
      upright: upright, decoded: orientation.uprightSize(of: scaled), variants: variants)
    return estimate
  }

  /// PNG, WebP, HEIC and AVIF: decoded interleaved (three or four bytes a pixel), then split into as
  /// many planes. Upper bounds: a non-interlaced PNG is decoded row by row and never holds the
  /// interleaved image; a HEIF thumbnail, when one serves, is smaller than the primary image.
  public static func interleavedDecode(
    format: ImageFormat, stored: PixelSize, orientation: Orientation, hasAlpha: Bool, compressedBytes: Int,
    variants: [VariantSpec], wholeImageCodec: Bool = true, margin: Double = RenderPlanner.reductionMargin
  ) -> MemoryEstimate {
    var estimate = MemoryEstimate()
    // The decoders keep a copy of the file for as long as they live (OwnedBytes).
    estimate.compressed = 2 * compressedBytes
    let upright = orientation.uprightSize(of: stored)
    var decoded = stored
    if format == .webp,
      let reduced = RenderPlanner.reducedDecodeSize(
        stored, requiredScale: RenderPlanner.requiredScale(source: upright, variants: variants),
        margin: margin)
    {
      decoded = reduced
    }
    let channels = hasAlpha ? 4 : 3
    estimate.decoded = decoded.pixels * channels
    estimate.interleaved = decoded.pixels * channels
    switch format {
    case .heif, .avif:
      // The codec's picture, YCbCr 4:2:0 at up to two bytes a sample (10-bit), plus alpha.
      estimate.codec = stored.pixels * (hasAlpha ? 5 : 3)
    case .webp where wholeImageCodec:
      // Lossless WebP decodes to a whole-image ARGB buffer first; lossy works row by row.
      estimate.codec = stored.pixels * 4
    default:
      break
    }
    estimate.rendering = renderingBytes(
      upright: upright, decoded: orientation.uprightSize(of: decoded), variants: variants)
    return estimate
  }

  /// Every variant's planes at full resolution (three bytes a pixel: an upper bound for 4:2:0 YCbCr,
  /// exact for RGB) and their encoded bytes (bounded by the pixels), plus a colour-converted copy of
  /// the largest one.
  static func renderingBytes(upright: PixelSize, decoded: PixelSize, variants: [VariantSpec]) -> Int {
    let steps = RenderPlanner.steps(original: upright, decoded: decoded, variants: variants)
    let outputs = steps.map { $0.output.pixels * 3 }
    return 2 * outputs.reduce(0, +) + (outputs.max() ?? 0)
  }
}
