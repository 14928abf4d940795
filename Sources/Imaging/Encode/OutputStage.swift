import ThumbCore

/// Turns resampled planes (stored orientation, source colours) into what is stored: upright, sRGB,
/// 8-bit, encoded. Colour conversion happens here, on outputs, because converting thumbnails costs a
/// fraction of converting the decoded original, and resampling is as valid in the source's space.
struct OutputStage {
  let model: ColorModel
  let coding: YCbCrCoding
  let transform: ColorTransform?

  init(color: ColorDescription, model: ColorModel, coding: YCbCrCoding = .jfif) {
    self.model = model
    self.coding = coding
    var transform: ColorTransform?
    switch color {
    // An HDR picture's planes are sRGB once decoded (HDRSignal.toSDR).
    case .unspecified, .hdr: transform = nil
    case .icc(let profile): transform = ColorTransformCache.shared.toSRGB(iccProfile: profile, model: model)
    case .nclx(let primaries, let transfer):
      transform =
        model == .rgb || model == .rgba
        ? ColorTransformCache.shared.toSRGB(primaries: primaries, transfer: transfer, alpha: model == .rgba)
        : nil
    }
    // CMYK without a profile, or with one that is not CMYK or does not parse: the press profile the
    // file was most likely separated for, rather than the naive inversion.
    if model == .invertedCMYK && transform == nil { transform = DefaultCMYKProfile.toSRGB }
    self.transform = transform
  }

  /// Whether a variant of `format` can go from YCbCr (or grey) planes straight to the JPEG encoder:
  /// no colour conversion needed, so no RGB is ever made. HEIF's YCbCr goes through RGB unless it is
  /// coded as JPEG's is.
  func encodesPlanes(_ format: OutputFormat) -> Bool {
    format == .jpeg && transform == nil && ((model == .yCbCr && coding == .jfif) || model == .gray)
  }

  func planeSubsampling(_ subsampling: ChromaSubsampling) -> [PlanarImage.Subsampling] {
    model == .gray ? [.none] : TurboCompressor.planeSubsampling(subsampling)
  }

  func encode(
    _ image: PlanarImage, orientation: Orientation, spec: VariantSpec, format: OutputFormat, direct: Bool
  ) throws(JobError) -> [UInt8] {
    if direct {
      let upright = image.oriented(orientation).paddedForJPEG()
      return try TurboCompressor().encode(
        planes: upright, quality: spec.quality, progressive: spec.progressive)
    }
    var pixels = sRGB(image, orientation: orientation)
    switch format {
    case .jpeg:
      if pixels.channels == 4 { pixels = pixels.flattenedOnWhite() }
      return try TurboCompressor().encode(
        pixels, quality: spec.quality, subsampling: spec.subsampling, progressive: spec.progressive)
    case .webp:
      if pixels.channels == 1 { pixels = pixels.expandedGray() }
      return try WebPEncoder.encode(pixels, quality: spec.quality)
    case .png:
      return try PNGEncoder.encode(pixels)
    case .avif:
      return try HEIFEncoder.avif(pixels, quality: spec.quality, speed: spec.speed)
    }
  }

  /// The ThumbHash of a (≤100x100) resampled image.
  func thumbHash(of image: PlanarImage, orientation: Orientation) -> String {
    var pixels = sRGB(image, orientation: orientation)
    if pixels.channels != 4 { pixels = pixels.withOpaqueAlpha() }
    return ThumbHash.encodeBase64(width: pixels.width, height: pixels.height, rgba: pixels.pixels)
  }

  /// The smart-crop analysis picture (SmartCrop) of a small resampled image: upright and sRGB, like the
  /// ThumbHash's input, and transparency flattened on white as a JPEG variant shows it.
  func cropAnalysis(of image: PlanarImage, orientation: Orientation) -> CropAnalysisImage {
    var pixels = sRGB(image, orientation: orientation)
    if pixels.channels == 4 { pixels = pixels.flattenedOnWhite() }
    return CropAnalysisImage(
      width: pixels.width, height: pixels.height, channels: pixels.channels, pixels: pixels.pixels)
  }

  /// Upright, interleaved, sRGB: grey (1 channel), RGB, or RGBA with straight alpha.
  func sRGB(_ image: PlanarImage, orientation: Orientation) -> PixelBuffer {
    let pixels = image.oriented(orientation).interleaved()
    switch model {
    // The inversion only if even the compiled-in profile could not be used.
    case .invertedCMYK: return transform?.apply(pixels) ?? pixels.rgbFromInvertedCMYK()
    default: return transform?.apply(pixels) ?? pixels
    }
  }
}

extension PlanarImage {
  /// A copy with each plane padded to whole MCUs as TurboJPEG's YUV functions read them.
  func paddedForJPEG() -> PlanarImage {
    let maxH = subsampling.map(\.horizontal).max() ?? 1
    let maxV = subsampling.map(\.vertical).max() ?? 1
    var result = self
    for (i, plane) in planes.enumerated() {
      // tjPlaneWidth pads the width only to the subsampling factor, not to 8: match it exactly.
      let stride = (size.width + maxH - 1) / maxH * maxH / subsampling[i].horizontal
      let rows = (size.height + maxV - 1) / maxV * maxV / subsampling[i].vertical
      if stride == plane.stride && rows == plane.rows { continue }
      var padded = Plane(width: plane.width, height: plane.height, stride: stride, rows: rows)
      plane.withUnsafeBufferPointer { src in
        padded.withUnsafeMutableBufferPointer { dst in
          for y in 0..<plane.height {
            for x in 0..<plane.width { dst[y * stride + x] = src[y * plane.stride + x] }
          }
        }
      }
      padded.replicateEdgesIntoPadding()
      result.planes[i] = padded
    }
    return result
  }
}

extension PixelBuffer {
  /// Adobe-style CMYK JPEGs store inverted ink values; R = C*K/255 and so on undoes both. The last
  /// resort, used only when no CMYK profile, not even the default one (DefaultCMYKProfile), can be used.
  func rgbFromInvertedCMYK() -> PixelBuffer {
    precondition(channels == 4)
    var rgb = PixelBuffer(width: width, height: height, channels: 3)
    pixels.withUnsafeBufferPointer { src in
      rgb.pixels.withUnsafeMutableBufferPointer { dst in
        for i in 0..<(width * height) {
          let k = UInt32(src[i * 4 + 3])
          for ch in 0..<3 { dst[i * 3 + ch] = UInt8((UInt32(src[i * 4 + ch]) * k + 127) / 255) }
        }
      }
    }
    return rgb
  }

  /// RGBA composited over white: JPEG has no alpha, and white is what a page behind it usually is.
  func flattenedOnWhite() -> PixelBuffer {
    precondition(channels == 4)
    var rgb = PixelBuffer(width: width, height: height, channels: 3)
    for i in 0..<(width * height) {
      let a = UInt32(pixels[i * 4 + 3])
      for ch in 0..<3 {
        rgb.pixels[i * 3 + ch] = UInt8((UInt32(pixels[i * 4 + ch]) * a + 255 * (255 - a) + 127) / 255)
      }
    }
    return rgb
  }

  func expandedGray() -> PixelBuffer {
    precondition(channels == 1)
    var rgb = PixelBuffer(width: width, height: height, channels: 3)
    for i in 0..<(width * height) {
      for ch in 0..<3 { rgb.pixels[i * 3 + ch] = pixels[i] }
    }
    return rgb
  }

  func withOpaqueAlpha() -> PixelBuffer {
    let source = channels == 1 ? expandedGray() : self
    var rgba = PixelBuffer(width: width, height: height, channels: 4)
    for i in 0..<(width * height) {
      for ch in 0..<3 { rgba.pixels[i * 4 + ch] = source.pixels[i * 3 + ch] }
      rgba.pixels[i * 4 + 3] = 255
    }
    return rgba
  }
}
