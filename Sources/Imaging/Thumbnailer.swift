public import ThumbCore

/// One encoded variant, ready to store.
public struct RenderedVariant: Sendable {
  public var name: String
  public var size: PixelSize
  public var format: OutputFormat
  public var data: [UInt8]
  /// The original's frames it shows: more than one for an animated variant of an animated original
  /// (the file may hold fewer: the encoder merges a frame that changes nothing into the one before, and
  /// makes a still of an animation that never changes).
  public var frames = 1
}

/// What the thumbnailer learned about an original.
public struct SourceInfo: Sendable {
  public var format: ImageFormat
  /// Upright size at full resolution.
  public var size: PixelSize
  /// The turn thumbd applied (HEIF: `.up`, libheif applies the file's own transforms).
  public var orientation: Orientation
  /// The JPEG DCT scale denominator used for decoding (1 = full size; 1 for other formats).
  public var decodeDenominator: Int
  /// How the decode was reduced on load: "1/4", "thumbnail 512x384", "scaled to 800x600", "1/1".
  public var reduction: String
  public var hasAlpha: Bool
  /// The original's ThumbHash, base64: a placeholder apps show while a thumbnail loads.
  public var thumbHash: String
  /// Where the render's time went, in seconds: decode, resize and encode (conversion to sRGB and the
  /// ThumbHash count as encoding: they are the output stage).
  public var timings = StageTimes()
  /// What the job's row and event should say about the original (a JPEG cut short, rendered).
  public var warnings: [RenderWarning] = []
  /// A video's facts (nil for photos).
  public var media: MediaInfo?
}

extension ContinuousClock.Instant {
  /// Seconds from this instant to now.
  fileprivate var secondsSince: Double { duration(to: .now).inSeconds }
}

/// An original opened for a job (Thumbnailer.open): its bytes and its decoder, header read, handed from
/// the job's admission to its render.
///
/// @unchecked Sendable: it passes from one task to the next, used by one at a time.
public final class OpenedOriginal: @unchecked Sendable {
  public let original: OriginalBytes
  fileprivate var decoder: (any SourceDecoder)?
  /// What moves with a still (nothing for other originals).
  let motion: StillMotion

  fileprivate init(_ original: OriginalBytes, decoder: any SourceDecoder, motion: StillMotion) {
    self.original = original
    self.decoder = decoder
    self.motion = motion
  }

  /// What the job's row says of the original beyond its format and size.
  fileprivate func media(_ decoder: any SourceDecoder) -> MediaInfo? { decoder.media ?? motion.media }

  /// The original's format.
  public var format: ImageFormat? { decoder?.header.format ?? original.format }

  /// The decoder, once: a decode uses it up.
  fileprivate func take() -> (any SourceDecoder)? {
    defer { decoder = nil }
    return decoder
  }
}

public struct Thumbnailer: Sendable {
  /// Originals with more pixels than this are refused before any pixel buffer is allocated
  /// (decompression bombs: a few KB of file can claim 65000x65000).
  public var maxPixels: Int

  public init(maxPixels: Int = 100_000_000) {
    self.maxPixels = maxPixels
  }

  /// Opens the original: its format sniffed, its decoder made and its header read, nothing large
  /// allocated. What `probe` and `render` take, so that a job opens its original once from its
  /// admission to its render. Blocks: call it from a BlockingPool thread.
  public func open(_ original: OriginalBytes) throws(JobError) -> OpenedOriginal {
    let decoder = try SourceDecoders.make(original, maxPixels: maxPixels)
    return OpenedOriginal(
      original, decoder: decoder,
      motion: StillMotion.describe(original, format: decoder.header.format, maxPixels: maxPixels))
  }

  /// The peak memory `render` is predicted to need for `data` (MemoryCostModel), from its header alone:
  /// what a worker reserves under `--memory-budget` before decoding. Nil when `render` would refuse the
  /// bytes before allocating anything large (no format thumbd decodes, an unreadable header, over
  /// `maxPixels`).
  ///
  /// `economical`: the prediction for `render(economical: true)`, the cheaper route.
  public func predictedPeak(
    of data: [UInt8], variants: [VariantSpec], economical: Bool = false
  ) -> MemoryEstimate? {
    guard let opened = try? open(.whole(data)) else { return nil }
    return probe(opened, variants: variants, economical: economical)?.estimate
  }

  /// `predictedPeak`, with what the header says of a video (nil for a photo): what a job's row and
  /// event carry even when the job fails before its render. Nil once `opened` was rendered.
  public func probe(
    _ opened: OpenedOriginal, variants: [VariantSpec], economical: Bool = false
  ) -> (estimate: MemoryEstimate, media: MediaInfo?)? {
    guard let decoder = opened.decoder else { return nil }
    let margin = economical ? RenderPlanner.economicalMargin : RenderPlanner.reductionMargin
    var estimate = decoder.estimate(variants: variants, margin: margin, fileBytes: opened.original.count)
    // A Motion Photo's preview: its clip copied out and decoded frame by frame, after the still.
    let animated = variants.filter { $0.animation != nil }
    if let clip = opened.motion.clip, let stream = opened.motion.clipStream, !animated.isEmpty {
      let scale = RenderPlanner.requiredScale(source: stream.coded, variants: animated)
      estimate.compressed += 2 * clip.length
      estimate.codec = max(
        estimate.codec,
        MemoryCostModel.videoPreviewBytes(stream, scale: scale, toneMapped: opened.motion.clipHDR))
    }
    return (estimate, opened.media(decoder))
  }

  /// Decodes `data` once, at the smallest size that still serves the largest variant, and renders every
  /// variant of `variants` from it, plus the original's ThumbHash. Blocks: call it from a BlockingPool
  /// thread.
  ///
  /// `economical`: decode smaller, keeping only the pixels the largest variant needs rather than twice
  /// that (RenderPlanner.economicalMargin): the cheaper route when the usual decode exceeds the memory
  /// budget. `posterAt`: a video's poster is its keyframe at or before this many seconds (a profile's
  /// `poster.at`), not the first worth showing.
  public func render(
    _ data: [UInt8], variants: [VariantSpec], economical: Bool = false, posterAt: Double? = nil
  ) throws(JobError) -> (SourceInfo, [RenderedVariant]) {
    try render(.whole(data), variants: variants, economical: economical, posterAt: posterAt)
  }

  /// `render` of an original held whole or in parts (a video's keyframes not held are passed over).
  public func render(
    _ original: OriginalBytes, variants: [VariantSpec], economical: Bool = false, posterAt: Double? = nil
  ) throws(JobError) -> (SourceInfo, [RenderedVariant]) {
    let opened = try open(original)
    switch try render(opened, variants: variants, economical: economical, posterAt: posterAt, asking: nil) {
    case .rendered(let info, let variants): return (info, variants)
    case .wants: throw JobError(.internalError, "a poster search that may not ask for keyframes asked")
    }
  }

  /// What `render` came to when the original is a video read by ranges whose poster search may ask
  /// for keyframes it does not hold.
  public enum Outcome: Sendable {
    case rendered(SourceInfo, [RenderedVariant])
    /// Read these ranges (RangedOriginal.add), then render again with `asking` set to the search.
    case wants([Range<Int>], PosterSearch)
  }

  /// `render`, for an original opened already, and a caller that can read more of a video read by
  /// ranges: with `asking` (a search to go on with, or a new one: `PosterSearch.start`), a keyframe of
  /// the poster window that is not held is asked for rather than passed over, so that the poster is the
  /// one a whole read gives. The decoder is used up: `opened` opens anew if rendered again.
  public func render(
    _ opened: OpenedOriginal, variants: [VariantSpec], economical: Bool = false, posterAt: Double? = nil,
    asking: PosterSearch?
  ) throws(JobError) -> Outcome {
    var timings = StageTimes(decode: 0, resize: 0, encode: 0)
    let mark = ContinuousClock.now
    let decoder: any SourceDecoder
    if let taken = opened.take() {
      decoder = taken
    } else {
      decoder = try SourceDecoders.make(opened.original, maxPixels: maxPixels)
    }
    decoder.searchPoster(at: posterAt, asking: asking)
    do {
      var outcome = try render(
        decoder, variants: variants, economical: economical, timings: &timings, since: mark)
      if case .rendered(var info, var rendered) = outcome {
        info.media = opened.media(decoder)
        info.warnings += opened.motion.warnings
        if let preview = try preview(of: decoder, opened, variants: variants) {
          try Self.animate(preview, variants: variants, rendered: &rendered, timings: &info.timings)
        }
        outcome = .rendered(info, rendered)
      }
      return outcome
    } catch {
      // A video that fails still says it was one.
      var failure = error
      if failure.media == nil { failure.media = opened.media(decoder) }
      throw failure
    }
  }

  private func render(
    _ decoder: any SourceDecoder, variants: [VariantSpec], economical: Bool, timings: inout StageTimes,
    since mark: ContinuousClock.Instant
  ) throws(JobError) -> Outcome {
    let header = decoder.header
    let upright = header.uprightSize
    let decoded = try decoder.decode(
      requiredScale: RenderPlanner.requiredScale(source: upright, variants: variants),
      margin: economical ? RenderPlanner.economicalMargin : RenderPlanner.reductionMargin)
    if let (ranges, search) = decoder.keyframesWanted { return .wants(ranges, search) }
    if let (ranges, search) = VideoPreview.samplesWanted(decoder, variants: variants) {
      return .wants(ranges, search)
    }
    timings.decode = mark.secondsSince
    let output = OutputStage(
      color: decoded.color ?? header.color, model: decoded.image.model, coding: decoded.image.yCbCrCoding)
    let orientation = header.orientation
    // A header may declare transparency the picture does not use (a GIF whose later frames have a
    // transparent colour, shown over an opaque first one): the decoder drops alpha that is all opaque.
    let hasAlpha = header.hasAlpha && decoded.image.model.hasAlpha
    let decodedUpright = orientation.uprightSize(of: decoded.image.size)
    // The ThumbHash's picture is one more (tiny) step of the cascade; its result is hashed, not encoded.
    let steps = RenderPlanner.steps(
      original: upright, decoded: decodedUpright, variants: variants, thumbHash: true)
    // Smart crops go last: their window is chosen on the analysis picture, which is made from a
    // whole-frame result of an earlier step. A crop feeds no other step, so nothing else changes.
    let smartCrops = Set(
      variants.indices.filter { variants[$0].fit == .cover && variants[$0].crop != .centre })
    let analysisStep =
      smartCrops.isEmpty
      ? nil : RenderPlanner.analysisStep(original: upright, decoded: decodedUpright, variants: variants)
    let ordered =
      steps.filter { !smartCrops.contains($0.variant) } + steps.filter { smartCrops.contains($0.variant) }
    let cascade = Cascade(
      variants: variants, steps: steps, smartCrops: smartCrops, analysisStep: analysisStep, upright: upright,
      output: output, orientation: orientation, hasAlpha: hasAlpha)
    var made = try cascade.run(ordered, from: decoded.image, timings: &timings)
    // An animated original's animated variants: the stills above become animations. A still's work was
    // one frame's, and for a smart crop it chose the window the animation keeps.
    if let source = decoder.animation {
      try Self.animate(
        source, cascade: cascade, analysis: made.analysis, rendered: &made.variants, timings: &timings)
    }
    let info = SourceInfo(
      format: header.format, size: upright, orientation: orientation,
      decodeDenominator: decoded.denominator,
      reduction: decoded.reduction, hasAlpha: hasAlpha, thumbHash: made.thumbHash, timings: timings,
      warnings: decoded.warnings, media: decoder.media)
    return .rendered(info, made.variants.compactMap { $0 })
  }

  /// Makes an animated original's animated variants from the stills the cascade made (their size,
  /// format and, for a smart crop, the window the still chose).
  private static func animate(
    _ source: any AnimatedSource, cascade: Cascade, analysis: CropAnalysisImage?,
    rendered: inout [RenderedVariant?], timings: inout StageTimes
  ) throws(JobError) {
    let (variants, upright) = (cascade.variants, cascade.upright)
    var regions: [Int: Region] = [:]
    for index in variants.indices where variants[index].animation != nil {
      if let analysis, cascade.smartCrops.contains(index) {
        regions[index] = smartCropRegion(
          variants[index], original: upright, analysis: analysis, sourceUpright: upright)
      } else {
        regions[index] =
          VariantLayout.make(source: upright, box: variants[index].box, fit: variants[index].fit).region
      }
    }
    guard !regions.isEmpty else { return }
    let animations = try animate(source, variants: variants, uprightRegions: regions, timings: &timings)
    for (index, animation) in animations {
      rendered[index]?.data = animation.data
      rendered[index]?.frames = animation.frames
    }
  }
}

extension Thumbnailer {
  /// The motion the animated variants of `variants` are made of when it is not an animated original's
  /// own: a preview of a video from its poster, or of a Motion Photo's clip around its still's moment.
  /// Nil when no variant is animated or nothing moves.
  private func preview(
    of decoder: any SourceDecoder, _ opened: OpenedOriginal, variants: [VariantSpec]
  ) throws(JobError) -> VideoPreview? {
    guard decoder.animation == nil, let limits = variants.lazy.compactMap(\.animation).first else {
      return nil
    }
    let animated = variants.filter { $0.animation != nil }
    if let video = decoder as? VideoSource {
      let scale = RenderPlanner.requiredScale(source: video.header.uprightSize, variants: animated)
      return VideoPreview(video, window: VideoPreview.window(of: video), limits: limits, requiredScale: scale)
    }
    guard let clip = opened.motion.clip, let bytes = opened.original.whole else { return nil }
    let video = try VideoSource(.whole(Array(bytes[clip.range])), maxPixels: maxPixels)
    let scale = RenderPlanner.requiredScale(source: video.header.uprightSize, variants: animated)
    let moment = clip.stillMicroseconds.map { Double($0) / 1_000_000 }
    return VideoPreview(video, window: .around(moment), limits: limits, requiredScale: scale)
  }

  /// The animated variants of a preview, in place of their stills: laid out on the preview's own
  /// picture (a Motion Photo's clip may be smaller than its still, or of another shape), centred.
  private static func animate(
    _ preview: VideoPreview, variants: [VariantSpec], rendered: inout [RenderedVariant],
    timings: inout StageTimes
  ) throws(JobError) {
    let upright = preview.header.uprightSize
    var regions: [Int: Region] = [:]
    for index in variants.indices where variants[index].animation != nil {
      regions[index] =
        VariantLayout.make(source: upright, box: variants[index].box, fit: variants[index].fit).region
    }
    let animations = try animate(preview, variants: variants, uprightRegions: regions, timings: &timings)
    for (index, animation) in animations {
      guard let at = rendered.firstIndex(where: { $0.name == variants[index].name }) else { continue }
      rendered[at].data = animation.data
      rendered[at].frames = animation.frames
      rendered[at].size = animation.size
    }
  }
}

/// The still variants and the ThumbHash of one decode: each step of the render plan resamples the
/// decode or an earlier whole-frame result, then encodes (a variant) or hashes (the ThumbHash).
struct Cascade {
  let variants: [VariantSpec]
  let steps: [RenderPlanner.Step]
  /// The variants whose crop window is chosen on the analysis picture.
  let smartCrops: Set<Int>
  let analysisStep: RenderPlanner.AnalysisStep?
  let upright: PixelSize
  let output: OutputStage
  let orientation: Orientation
  let hasAlpha: Bool

  struct Made {
    var variants: [RenderedVariant?]
    var thumbHash = ""
    /// The smart crops' analysis picture, when one was made.
    var analysis: CropAnalysisImage?
  }

  /// Runs the steps in `order`; the decode is `decoded`, in stored orientation.
  func run(
    _ order: [RenderPlanner.Step], from decoded: PlanarImage, timings: inout StageTimes
  )
    throws(JobError) -> Made
  {
    var made = Made(variants: Array(repeating: nil, count: variants.count))
    var images: [Int: PlanarImage] = [:]  // results later steps read, in stored orientation
    for step in order {
      let source = step.source.flatMap { images[$0] } ?? decoded
      let sourceUpright = orientation.uprightSize(of: source.size)
      // Keep only what a later step or the analysis reads.
      let kept = steps.contains { $0.source == step.variant } || analysisStep?.source == step.variant
      var mark = ContinuousClock.now
      if step.thumbHash {
        let image = Resampler.resample(
          source, region: orientation.storedRegion(step.region, upright: sourceUpright),
          to: orientation.uprightSize(of: step.output),
          outputSubsampling: Array(repeating: .none, count: source.planes.count), chromaShift: (0, 0))
        timings.add(mark.secondsSince, to: .resize)
        mark = .now
        made.thumbHash = output.thumbHash(of: image, orientation: orientation)
        if kept { images[step.variant] = image }
        timings.add(mark.secondsSince, to: .encode)
        continue
      }
      let spec = variants[step.variant]
      var uprightRegion = step.region
      if let analysisStep, smartCrops.contains(step.variant) {
        let picture =
          made.analysis
          ?? Thumbnailer.cropAnalysis(
            analysisStep, from: analysisStep.source.flatMap { images[$0] } ?? decoded, output: output,
            orientation: orientation)
        made.analysis = picture
        uprightRegion = Thumbnailer.smartCropRegion(
          spec, original: upright, analysis: picture, sourceUpright: sourceUpright)
      }
      let region = orientation.storedRegion(uprightRegion, upright: sourceUpright)
      let size = orientation.uprightSize(of: step.output)  // the output as stored (a swap undoes a swap)
      let format = spec.format.resolved(sourceHasAlpha: hasAlpha)
      let direct = output.encodesPlanes(format)
      let image = Resampler.resample(
        source, region: region, to: size,
        outputSubsampling: direct
          ? output.planeSubsampling(spec.subsampling) : Array(repeating: .none, count: source.planes.count),
        chromaShift: direct ? orientation.chromaShift(storedOutput: size) : (0, 0))
      timings.add(mark.secondsSince, to: .resize)
      mark = .now
      let bytes: [UInt8]
      do {
        bytes = try output.encode(image, orientation: orientation, spec: spec, format: format, direct: direct)
      } catch {
        timings.add(mark.secondsSince, to: .encode)
        throw error
      }
      made.variants[step.variant] = RenderedVariant(
        name: spec.name, size: step.output, format: format, data: bytes)
      if kept { images[step.variant] = image }
      timings.add(mark.secondsSince, to: .encode)
    }
    return made
  }
}
