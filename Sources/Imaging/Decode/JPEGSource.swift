import ThumbCore

/// JPEG through TurboJPEG, reduced on load by DCT scaling and decoded to YCbCr planes.
struct JPEGSource: SourceDecoder {
  let data: [UInt8]
  let header: SourceHeader
  private let jpegHeader: TurboDecompressor.Header
  private let decompressor: TurboDecompressor

  init(_ data: [UInt8]) throws(JobError) {
    self.data = data
    decompressor = try TurboDecompressor()
    let decompressor = self.decompressor
    let read = data.withUnsafeBytes { bytes in
      Result { () throws(JobError) -> (TurboDecompressor.Header, Orientation, [UInt8]?) in
        (
          try decompressor.header(bytes), ExifReader.jpegOrientation(bytes) ?? .up,
          JPEGSegments.iccProfile(bytes)
        )
      }
    }
    let (jpegHeader, orientation, icc) = try read.get()
    self.jpegHeader = jpegHeader
    header = SourceHeader(
      format: .jpeg, storedSize: jpegHeader.size, orientation: orientation, hasAlpha: false,
      color: icc.map { .icc($0) } ?? .unspecified)
  }

  func estimate(variants: [VariantSpec], margin: Double, fileBytes: Int) -> MemoryEstimate {
    guard let frame = ImageProbe.jpegFrame(data) else {
      return interleavedEstimate(variants: variants, margin: margin, fileBytes: fileBytes)
    }
    // An embedded profile that is not sRGB sends the outputs through RGB and lcms2.
    var converts = false
    if case .icc(let profile) = header.color {
      converts =
        ColorTransformCache.shared.toSRGB(iccProfile: profile, model: frame.isRGB ? .rgb : .yCbCr) != nil
    }
    return MemoryCostModel.jpeg(
      frame: frame, compressedBytes: fileBytes, orientation: header.orientation, variants: variants,
      margin: margin, convertsColour: converts)
  }

  func decode(requiredScale: Double, margin: Double) throws(JobError) -> DecodedSource {
    let denominator = RenderPlanner.decodeDenominator(requiredScale: requiredScale, margin: margin)
    let result = data.withUnsafeBytes { bytes in
      Result { () throws(JobError) -> (image: PlanarImage, warned: Bool) in
        try decompressor.decodePlanes(bytes, header: jpegHeader, denominator: denominator)
      }
    }
    let (image, warned) = try result.get()
    // An upload cut short: rendered with a warning when little is missing (TruncatedJPEG).
    var warnings: [RenderWarning] = []
    if warned,
      let warning = try TruncatedJPEG.judge(
        image, file: data, said: decompressor.warning, height: jpegHeader.size.height)
    {
      warnings.append(warning)
    }
    return DecodedSource(
      image: image, reduction: "1/\(denominator)", denominator: denominator, warnings: warnings)
  }
}

extension JPEGSource: FormatDecoder {
  static let formats: Set<ImageFormat> = [.jpeg]

  static func open(
    _ original: OriginalBytes, format: ImageFormat, maxPixels: Int
  ) throws(JobError) -> JPEGSource {
    try JPEGSource(original.wholeFile(of: format))
  }
}
