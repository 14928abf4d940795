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
/// The parts are not all alive at once. Decoding holds the file, the coefficients (progressive files) and
/// the decoded pixels; orienting holds the decoded pixels twice; rendering holds the upright pixels and
/// the variants. The peak is the largest of those three phases, plus `margin` for the allocator.
public struct MemoryEstimate: Sendable, Equatable, CustomStringConvertible {
  /// The downloaded file, held for the whole job.
  public var compressed = 0
  /// libjpeg's whole-image coefficient buffer (progressive files only), at full size whatever the scale.
  public var coefficients = 0
  /// The decoded pixels at the chosen DCT scale.
  public var decoded = 0
  /// The rotated copy EXIF orientation needs (0 when upright).
  public var orientedCopy = 0
  /// The resampler's largest intermediate (horizontal pass) plus every variant's pixels and encoded bytes.
  public var rendering = 0

  /// Allocator and bookkeeping overhead, a fraction of the rest (measured peaks ran up to 0.98 of the
  /// prediction without it).
  public static let margin = 0.10

  public var total: Int {
    let phases = [coefficients + decoded, decoded + orientedCopy, decoded + rendering]
    let peak = compressed + (phases.max() ?? 0)
    return peak + Int(Double(peak) * Self.margin)
  }

  public var description: String {
    "\(ByteSize.format(total)) (file \(ByteSize.format(compressed)), coefficients \(ByteSize.format(coefficients)), "
      + "pixels \(ByteSize.format(decoded + orientedCopy)), rendering \(ByteSize.format(rendering)))"
  }
}

/// Predicts a job's peak memory from the header, for admission under `--memory-budget`.
public enum MemoryCostModel {
  public static func jpeg(
    frame: JPEGFrame, compressedBytes: Int, orientation: Orientation, variants: [VariantSpec]
  ) -> MemoryEstimate {
    var estimate = MemoryEstimate()
    estimate.compressed = compressedBytes
    if frame.progressive {
      // 64 two-byte coefficients per block (libjpeg's JCOEF is a short).
      estimate.coefficients = frame.coefficientBlocks * 64 * 2
    }
    let upright = orientation.uprightSize(of: frame.size)
    let denominator = RenderPlanner.decodeDenominator(source: upright, variants: variants)
    let decoded = PixelSize(
      width: (upright.width + denominator - 1) / denominator,
      height: (upright.height + denominator - 1) / denominator)
    let channels = frame.components == 4 ? 4 : 3
    let decodedBytes = decoded.pixels * channels
    estimate.decoded = decodedBytes
    estimate.orientedCopy = orientation == .up ? 0 : decodedBytes
    let steps = RenderPlanner.steps(original: upright, decoded: decoded, variants: variants)
    let outputs = steps.map { $0.output.pixels * 3 }.reduce(0, +)
    // The horizontal pass keeps output-width rows for (at most) every source row of the decode.
    let scratch = steps.map { $0.output.width * decoded.height * 3 }.max() ?? 0
    // Encoded variants are bounded by their pixels (a JPEG of a photo is a fraction of it).
    estimate.rendering = scratch + 2 * outputs
    return estimate
  }
}
