/// What a JPEG's frame header says, enough to predict the memory its decode needs.
public struct JPEGFrame: Sendable, Equatable {
  /// As stored, before EXIF orientation.
  public var size: PixelSize
  /// Each component's horizontal and vertical sampling factor (4:2:0 is [2x2, 1x1, 1x1]).
  public var sampling: [Sampling]
  /// SOF2 (and the other progressive SOFs): libjpeg must buffer every coefficient of the full-size image.
  public var progressive: Bool
  /// Three components that are R, G and B rather than YCbCr (an Adobe APP14 transform of 0, or
  /// component ids 'R', 'G', 'B', as libjpeg decides): decoded interleaved, not to planes.
  public var isRGB = false

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

  /// What the libraries hold whatever the picture's size (Huffman and quantisation tables, libjpeg's
  /// per-scan and IDCT buffers, zlib's window, lcms2's transform): on a 2 MP progressive JPEG the
  /// proportional margin alone left 3% of room.
  public static let fixedOverhead = 2 << 20

  public var total: Int {
    let peak = compressed + max(coefficients + codec + decoded + interleaved, decoded + rendering)
    return peak + Int(Double(peak) * Self.margin) + Self.fixedOverhead
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
    margin: Double = RenderPlanner.reductionMargin, convertsColour: Bool = false
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
    if frame.components == 4 || frame.isRGB {
      // CMYK and RGB: decoded interleaved, then split into planes.
      estimate.interleaved = scaled.pixels * frame.components
      estimate.decoded = scaled.pixels * frame.components
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
      upright: upright, decoded: orientation.uprightSize(of: scaled), variants: variants,
      convertsColour: convertsColour || frame.components == 4 || frame.isRGB)
    return estimate
  }

  /// PNG, WebP, HEIC, AVIF, JPEG XL and GIF: decoded interleaved (three or four bytes a pixel, twice
  /// that when `deep`: an HDR picture's 16-bit samples before its tone map), then split into as many
  /// planes, beside what the format's codec holds (`FormatTraits.decoding`). Upper bounds: a
  /// non-interlaced PNG is decoded row by row and never holds the interleaved image; a HEIF thumbnail,
  /// when one serves, is smaller than the primary image.
  ///
  /// `composedFrame`: the size of an animated WebP's first frame when libwebp's animation decoder
  /// composes it onto its canvas (`stored`): that decoder cannot scale and holds two canvases of its own.
  public static func interleavedDecode(
    format: ImageFormat, stored: PixelSize, orientation: Orientation, hasAlpha: Bool, compressedBytes: Int,
    variants: [VariantSpec], wholeImageCodec: Bool = true, margin: Double = RenderPlanner.reductionMargin,
    coded: PixelSize? = nil, composedFrame: PixelSize? = nil, frames: Int = 1, deep: Bool = false
  ) -> MemoryEstimate {
    var estimate = MemoryEstimate()
    // The decoders keep a copy of the file for as long as they live (OwnedBytes).
    estimate.compressed = 2 * compressedBytes
    let upright = orientation.uprightSize(of: stored)
    let codec = format.traits.decoding
    var decoded = stored
    if case .interleaved(_, _, _, reduces: true, _)? = codec, composedFrame == nil,
      let reduced = RenderPlanner.reducedDecodeSize(
        stored, requiredScale: RenderPlanner.requiredScale(source: upright, variants: variants),
        margin: margin)
    {
      decoded = reduced
    }
    let channels = hasAlpha || composedFrame != nil ? 4 : 3
    estimate.decoded = decoded.pixels * channels
    // Composed: the animation decoder's current canvas, RGBA, which the planes are split from.
    estimate.interleaved = decoded.pixels * channels * (deep ? 2 : 1)
    if let composedFrame {
      // Its previous canvas (kept for the next frame to blend with), and the frame's own codec buffer
      // while it decodes: a lossless frame's ARGB, four bytes a pixel of the frame (a lossy frame's
      // alpha plane is one).
      estimate.codec = stored.pixels * 4 + composedFrame.pixels * 4
    } else if case .interleaved(let perPixel, let withAlpha, let perRow, _, let wholeImageOnly)? = codec,
      wholeImageCodec || !wholeImageOnly
    {
      let picture = coded ?? stored
      estimate.codec = picture.pixels * (hasAlpha ? withAlpha : perPixel) + picture.width * perRow
    }
    estimate.rendering =
      renderingBytes(
        upright: upright, decoded: orientation.uprightSize(of: decoded), variants: variants,
        convertsColour: true)
      + animationBytes(canvas: stored, upright: upright, frames: frames, variants: variants)
    return estimate
  }

  /// Encoded bytes an animated WebP variant is allowed per pixel of a frame it keeps (a palette
  /// picture's frames, most of them only what changed, come to a tenth of this at quality 82), counted
  /// four times: the frames as encoded, libwebpmux's copy of them, the assembled file, and its copy
  /// handed back.
  static let animationBytesPerFramePixel = 0.25

  /// The animated variants of an animation of `frames` frames (none for a still), made once the stills
  /// are done, counted on top of them. The frame reader's canvas (and libwebp's two when it composes),
  /// the frame as planes; for each animated variant its resampled planes, their interleaved copy, the
  /// encoder's ARGB picture and its own canvases (previous, current, candidate sub-frames): 24 bytes a
  /// pixel of the output; and every frame it keeps, encoded.
  public static func animationBytes(
    canvas: PixelSize, upright: PixelSize, frames: Int, variants: [VariantSpec]
  ) -> Int {
    let animated = variants.compactMap { spec in spec.animation.map { (spec, $0) } }
    guard frames > 1, !animated.isEmpty else { return 0 }
    var total = Double(canvas.pixels * 16)
    for (spec, limits) in animated {
      let output = Double(VariantLayout.make(source: upright, box: spec.box, fit: spec.fit).output.pixels)
      let kept = Double(min(frames, limits.maxFrames))
      total += output * 24 + 4 * kept * output * animationBytesPerFramePixel
    }
    return Int(total)
  }

  /// Every variant's planes and encoded bytes (bounded by the planes' bytes), plus the upright and
  /// MCU-padded copies of the largest. A JPEG variant made straight from YCbCr planes holds 1.5 bytes a
  /// pixel at 4:2:0 (3 at 4:4:4); anything else is three bytes a pixel, and an output that is
  /// colour-converted or leaves as RGB (an ICC profile, CMYK, PNG, WebP, HEIF) also passes through an
  /// interleaved copy, the converted copy and, for JPEG, a flattened one: about ten more bytes a pixel
  /// for the largest. The AV1 encoder's own buffers come on top while an AVIF variant is encoded (one
  /// at a time): measured at 6.4 MiB plus 27 bytes a pixel from 320x200 to 1600x1000, so the model
  /// takes 8 MiB plus 30 bytes a pixel of the largest AVIF variant.
  static func renderingBytes(
    upright: PixelSize, decoded: PixelSize, variants: [VariantSpec], convertsColour: Bool = false
  ) -> Int {
    let steps = RenderPlanner.steps(original: upright, decoded: decoded, variants: variants)
    var total = 0.0
    var largest = 0
    var largestAVIF: Int?
    for step in steps {
      let spec = variants[step.variant]
      let planar = !convertsColour && spec.format == .jpeg && spec.subsampling == .s420
      total += Double(step.output.pixels) * 2 * (planar ? 1.5 : 3)
      largest = max(largest, step.output.pixels)
      if spec.format == .avif { largestAVIF = max(largestAVIF ?? 0, step.output.pixels) }
    }
    let avifEncoder = largestAVIF.map { 8 << 20 + $0 * 30 } ?? 0
    return Int(total) + largest * (convertsColour ? 13 : 4) + avifEncoder
  }

}
