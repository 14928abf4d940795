public import ThumbCore

/// One encoded variant, ready to store.
public struct RenderedVariant: Sendable {
  public var name: String
  public var size: PixelSize
  public var format: OutputFormat
  public var data: [UInt8]
}

/// What the thumbnailer learned about an original.
public struct SourceInfo: Sendable {
  public var format: ImageFormat
  /// Upright size at full resolution.
  public var size: PixelSize
  public var orientation: Orientation
  /// The DCT scale denominator used for decoding (1 = full size).
  public var decodeDenominator: Int
}

public struct Thumbnailer: Sendable {
  /// Originals with more pixels than this are refused before any pixel buffer is allocated
  /// (decompression bombs: a few KB of file can claim 65000x65000).
  public var maxPixels: Int

  public init(maxPixels: Int = 100_000_000) {
    self.maxPixels = maxPixels
  }

  /// The peak memory `render` is predicted to need for `data` (MemoryCostModel), from its header alone:
  /// what a worker reserves under `--memory-budget` before decoding. Nil when `render` would refuse the
  /// bytes before allocating anything large (not a JPEG, no frame header, over `maxPixels`).
  public func predictedPeak(of data: [UInt8], variants: [VariantSpec]) -> MemoryEstimate? {
    guard ImageFormat.sniff(data) == .jpeg, let frame = ImageProbe.jpegFrame(data),
      frame.size.pixels <= maxPixels
    else { return nil }
    let orientation = data.withUnsafeBytes { ExifReader.jpegOrientation($0) } ?? .up
    return MemoryCostModel.jpeg(
      frame: frame, compressedBytes: data.count, orientation: orientation, variants: variants)
  }

  /// Decodes `data` once, at the smallest DCT scale that still serves the largest variant, and renders
  /// every variant of `variants` from it. Blocks: call it from a BlockingPool thread.
  public func render(
    _ data: [UInt8], variants: [VariantSpec]
  ) throws(JobError) -> (SourceInfo, [RenderedVariant]) {
    guard let format = ImageFormat.sniff(data) else {
      throw JobError(.unsupportedFormat, "the bytes are not an image format thumbd knows")
    }
    guard format == .jpeg else {
      throw JobError(.unsupportedFormat, "\(format.rawValue) originals are not supported yet")
    }
    let decompressor = try TurboDecompressor()
    // withUnsafeBytes rethrows untyped errors, so the closure hands back a Result instead.
    let decoded = data.withUnsafeBytes { bytes in
      Result { () throws(JobError) -> (SourceInfo, PixelBuffer) in
        let header = try decompressor.header(bytes)
        guard header.size.pixels <= maxPixels else {
          throw JobError(
            .tooLarge, "\(header.size) is \(header.size.pixels) pixels, over the limit of \(maxPixels)")
        }
        let orientation = ExifReader.jpegOrientation(bytes) ?? .up
        let uprightSize = orientation.uprightSize(of: header.size)
        let denominator = RenderPlanner.decodeDenominator(source: uprightSize, variants: variants)
        let decoded = try decompressor.decode(bytes, header: header, denominator: denominator)
        let info = SourceInfo(
          format: format, size: uprightSize, orientation: orientation, decodeDenominator: denominator)
        return (info, decoded.oriented(orientation))
      }
    }
    let (info, upright) = try decoded.get()
    return (info, try renderVariants(from: upright, original: info.size, variants: variants))
  }

  /// Resamples and encodes every variant, largest first, each from the smallest adequate earlier result.
  func renderVariants(
    from decoded: PixelBuffer, original: PixelSize, variants: [VariantSpec]
  ) throws(JobError)
    -> [RenderedVariant]
  {
    let steps = RenderPlanner.steps(original: original, decoded: decoded.size, variants: variants)
    let compressor = try TurboCompressor()
    var images: [Int: PixelBuffer] = [:]
    var rendered: [RenderedVariant?] = Array(repeating: nil, count: variants.count)
    for step in steps {
      let source = step.source.flatMap { images[$0] } ?? decoded
      let image = Resampler.resample(source, region: step.region, to: step.output)
      let spec = variants[step.variant]
      let bytes = try compressor.encode(image, quality: spec.quality)
      rendered[step.variant] = RenderedVariant(
        name: spec.name, size: image.size, format: spec.format, data: bytes)
      // Keep only what a later step may read.
      if steps.contains(where: { $0.source == step.variant }) { images[step.variant] = image }
    }
    return rendered.compactMap { $0 }
  }
}
