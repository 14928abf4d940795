/// Decides how an original becomes its variants: at which DCT scale to decode, and which image each
/// variant is resampled from. Pure arithmetic, so every choice is unit-tested.
public enum RenderPlanner {
  /// The resampler wants at least this much reduction left after shrink-on-load, because the block
  /// shrink of a scaled decode is sharper and aliases more than a windowed-sinc resize (libvips uses the
  /// same margin in its thumbnailer).
  public static let reductionMargin = 2.0

  /// How far below `reductionMargin` an earlier result may fall and still feed a later variant. Output
  /// sizes are whole pixels, so a result made at exactly twice a variant's size can miss 2x by a
  /// fraction of a pixel on one axis (5640x3172 to 1600x900 is 0.28369 across and 0.28373 down; 800x450
  /// needs 0.14187 down), and without the tolerance that variant would be made from the full decode,
  /// at several times the cost and no gain in quality.
  public static let cascadeTolerance = 0.005

  /// The JPEG DCT scale denominators we use (1/1, 1/2, 1/4, 1/8): the ones libjpeg-turbo has SIMD paths for.
  public static let dctDenominators = [8, 4, 2, 1]

  /// Output pixels per original pixel of the variant that needs the most detail (at most 1: nothing is
  /// upscaled).
  public static func requiredScale(source: PixelSize, variants: [VariantSpec]) -> Double {
    variants.map { VariantLayout.make(source: source, box: $0.box, fit: $0.fit).scale }.max() ?? 1
  }

  /// The margin an economical decode keeps: none beyond the pixels the largest variant needs. The
  /// cheaper route for an original whose usual decode would not fit the memory budget (the final resize
  /// then starts from a DCT-scaled image, slightly sharper than a windowed-sinc resize would leave it).
  public static let economicalMargin = 1.0

  /// The largest reduction a scaled decode may make, given the upright source size and the variants.
  /// Returns the denominator d: decode at 1/d.
  public static func decodeDenominator(
    source: PixelSize, variants: [VariantSpec], margin: Double = reductionMargin
  ) -> Int {
    decodeDenominator(requiredScale: requiredScale(source: source, variants: variants), margin: margin)
  }

  public static func decodeDenominator(requiredScale needed: Double, margin: Double = reductionMargin) -> Int
  {
    for d in dctDenominators where Double(d) * margin * needed <= 1.0 {
      // The decoded size is rounded up by libjpeg, so it is never smaller than the exact 1/d.
      return d
    }
    return 1
  }

  /// For decoders that scale to any size (WebP): the size that still leaves `reductionMargin`, or nil
  /// when that is no reduction.
  public static func reducedDecodeSize(
    _ size: PixelSize, requiredScale: Double, margin: Double = reductionMargin
  ) -> PixelSize? {
    let scale = requiredScale * margin
    guard scale < 1 else { return nil }
    let reduced = PixelSize(
      width: max(1, Int((Double(size.width) * scale).rounded(.up))),
      height: max(1, Int((Double(size.height) * scale).rounded(.up))))
    return reduced.pixels < size.pixels ? reduced : nil
  }

  /// Which embedded thumbnail (HEIF) to decode instead of the full image: the smallest that is at
  /// least `needed` on both sides (as libvips decides), or nil when none is.
  public static func embeddedThumbnail(sizes: [PixelSize], needed: PixelSize) -> Int? {
    sizes.indices
      .filter { sizes[$0].width >= needed.width && sizes[$0].height >= needed.height }
      .min { sizes[$0].pixels < sizes[$1].pixels }
  }

  /// Where smart crops (SmartCrop) are decided: a picture of the whole frame, at most
  /// `SmartCrop.analysisSide` on its longest side and never larger than the decode, resampled from
  /// `source`: the smallest `inside` variant at least `output` on both sides (its result is a
  /// whole-frame image that exists anyway), or the decode when none is (nil).
  public struct AnalysisStep: Hashable, Sendable {
    public var source: Int?
    public var output: PixelSize
  }

  /// `original` and `decoded` are upright sizes, as for `steps`.
  public static func analysisStep(
    original: PixelSize, decoded: PixelSize, variants: [VariantSpec]
  ) -> AnalysisStep {
    let box = PixelSize(width: SmartCrop.analysisSide, height: SmartCrop.analysisSide)
    let output = VariantLayout.make(source: decoded, box: box, fit: .inside).output
    let wholeFrames = variants.indices.filter { variants[$0].fit == .inside }.map {
      (index: $0, size: VariantLayout.make(source: original, box: variants[$0].box, fit: .inside).output)
    }
    let source = wholeFrames.filter { $0.size.width >= output.width && $0.size.height >= output.height }
      .min { $0.size.pixels < $1.size.pixels }?.index
    return AnalysisStep(source: source, output: output)
  }

  /// One resample: variant `variant` is made from `source` (nil = the decoded image, otherwise an earlier
  /// step's output), taking `region` of that source image. The ThumbHash's step (`thumbHash`) comes
  /// after the variants: its `variant` is the number of variants.
  public struct Step: Hashable, Sendable {
    public var variant: Int
    public var source: Int?
    public var region: Region
    public var output: PixelSize
    /// The step makes the ThumbHash's picture: its pixels are hashed, not encoded.
    public var thumbHash = false
  }

  /// The ThumbHash's picture: one more whole-frame step of the cascade, at most `ThumbHash.maxSide` on
  /// each side (a result later, smaller steps may be made from, like any whole frame).
  public static let thumbHashBox = PixelSize(width: ThumbHash.maxSide, height: ThumbHash.maxSide)

  /// The steps, largest variant first. `original` is the upright full-resolution size (outputs are
  /// defined by it, so a scaled decode never changes a variant's size); `decoded` is the upright size of
  /// the decoded image. A variant is made from the smallest earlier full-frame result that still has
  /// `reductionMargin` times the detail it needs, else from the decode. `thumbHash`: the ThumbHash's
  /// picture is one of the steps.
  public static func steps(
    original: PixelSize, decoded: PixelSize, variants: [VariantSpec], thumbHash: Bool = false
  ) -> [Step] {
    let targets = variants.map { (box: $0.box, fit: $0.fit) } + (thumbHash ? [(thumbHashBox, .inside)] : [])
    let layouts = targets.map { VariantLayout.make(source: original, box: $0.box, fit: $0.fit) }
    let order = layouts.indices.sorted { (layouts[$0].scale, -$0) > (layouts[$1].scale, -$1) }

    // Candidate sources: (variant index or nil, x and y scale relative to the original).
    let decodedScale = (
      x: Double(decoded.width) / Double(original.width), y: Double(decoded.height) / Double(original.height)
    )
    var candidates: [(index: Int?, sx: Double, sy: Double)] = []
    var steps: [Step] = []
    for i in order {
      let layout = layouts[i]
      let need = layout.scale
      var chosen: (index: Int?, sx: Double, sy: Double) = (nil, decodedScale.x, decodedScale.y)
      for c in candidates where min(c.sx, c.sy) >= need * reductionMargin * (1 - cascadeTolerance) {
        if min(c.sx, c.sy) < min(chosen.sx, chosen.sy) { chosen = c }
      }
      steps.append(
        Step(
          variant: i, source: chosen.index, region: layout.region.scaled(x: chosen.sx, y: chosen.sy),
          output: layout.output, thumbHash: i == variants.count))
      // Only whole-picture results can feed later variants: a crop has lost part of the frame.
      if targets[i].fit == .inside {
        candidates.append(
          (
            i, Double(layout.output.width) / Double(original.width),
            Double(layout.output.height) / Double(original.height)
          ))
      }
    }
    return steps
  }
}
