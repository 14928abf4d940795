import ThumbCore

/// The thumbnailer's part of animated variants: every frame of an animated original, from the first,
/// resampled to each animated variant and encoded as one animated WebP per variant, each variant
/// stopping at its own limits (AnimationLimits).
extension Thumbnailer {
  /// Canvas pixels an animation may cost altogether (every frame is decompressed, composited and
  /// resampled whole): it is cut at the frame that would go past, as it is at its limits. About 1.5 s
  /// of one core for a GIF, before encoding.
  public static let animationPixelBudget = 100_000_000

  /// One animated variant being made.
  private struct Animating {
    var index: Int
    var limits: AnimationLimits
    /// In the canvas's stored orientation.
    var region: Region
    var storedOutput: PixelSize
    var encoder: AnimatedWebPEncoder
    var done = false
  }

  /// What each animated variant became: its file, its frame count and its size, by index in
  /// `variants`. `uprightRegions`: where each animated variant sits on the upright canvas.
  static func animate(
    _ source: any Animation, variants: [VariantSpec], uprightRegions: [Int: Region],
    timings: inout StageTimes
  ) throws(JobError) -> [Int: (data: [UInt8], frames: Int, size: PixelSize)] {
    let orientation = source.header.orientation
    let upright = source.header.uprightSize
    var animating: [Animating] = []
    for (index, region) in uprightRegions.sorted(by: { $0.key < $1.key }) {
      guard let limits = variants[index].animation else { continue }
      let layout = VariantLayout.make(source: upright, box: variants[index].box, fit: variants[index].fit)
      animating.append(
        Animating(
          index: index, limits: limits, region: orientation.storedRegion(region, upright: upright),
          storedOutput: orientation.uprightSize(of: layout.output),
          encoder: try AnimatedWebPEncoder(
            size: layout.output, quality: variants[index].quality, loopCount: source.loopCount)))
    }
    let frames = try source.frames()
    let canvasPixels = max(1, source.header.storedSize.pixels)
    var spent = 0
    // A WebP's frames come as RGBA whatever its first frame is, a GIF's as its header says.
    var output: OutputStage?
    var mark = ContinuousClock.now
    while animating.contains(where: { !$0.done }), spent + canvasPixels <= source.pixelBudget,
      let frame = try frames.next()
    {
      spent += canvasPixels
      timings.add(mark.duration(to: .now).inSeconds, to: .decode)
      for i in animating.indices where !animating[i].done {
        let encoder = animating[i].encoder
        let limits = animating[i].limits
        // The first frame always; the others while the variant stays within its frames and seconds.
        if encoder.frames >= limits.maxFrames
          || (encoder.frames > 0 && Double(encoder.elapsed + frame.duration) > limits.maxSeconds * 1000)
        {
          animating[i].done = true
          continue
        }
        mark = .now
        let image = Resampler.resample(
          frame.image, region: animating[i].region, to: animating[i].storedOutput,
          outputSubsampling: Array(repeating: .none, count: frame.image.planes.count))
        timings.add(mark.duration(to: .now).inSeconds, to: .resize)
        mark = .now
        if output?.model != image.model {
          output = OutputStage(color: frame.color ?? source.header.color, model: image.model)
        }
        var pixels = output!.sRGB(image, orientation: orientation)
        if pixels.channels == 1 { pixels = pixels.expandedGray() }
        try encoder.add(pixels, duration: frame.duration)
        timings.add(mark.duration(to: .now).inSeconds, to: .encode)
      }
      mark = .now
    }
    mark = .now
    defer { timings.add(mark.duration(to: .now).inSeconds, to: .encode) }
    var results: [Int: (data: [UInt8], frames: Int, size: PixelSize)] = [:]
    for variant in animating where variant.encoder.frames > 0 {
      results[variant.index] = (
        try variant.encoder.finish(), variant.encoder.frames,
        orientation.uprightSize(of: variant.storedOutput)
      )
    }
    return results
  }
}
