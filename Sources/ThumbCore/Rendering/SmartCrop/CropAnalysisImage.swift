/// A small upright picture of a whole original, for the smart-crop decision (SmartCrop): luma and
/// chroma as full-range BT.601 YCbCr (JPEG's model), each a packed array of `width` x `height` samples.
/// Plain arrays, so that tests can draw one directly and the decision stays free of the imaging code.
public struct CropAnalysisImage: Sendable {
  public let width: Int
  public let height: Int
  public let luma: [UInt8]
  public let cb: [UInt8]
  public let cr: [UInt8]

  public init(width: Int, height: Int, luma: [UInt8], cb: [UInt8], cr: [UInt8]) {
    precondition(width > 0 && height > 0, "an analysis image has at least one pixel")
    precondition(
      [luma, cb, cr].allSatisfy { $0.count == width * height }, "each plane has width x height samples")
    self.width = width
    self.height = height
    self.luma = luma
    self.cb = cb
    self.cr = cr
  }

  /// From interleaved sRGB (`channels` 3) or grey (`channels` 1) pixels, rows packed.
  public init(width: Int, height: Int, channels: Int, pixels: [UInt8]) {
    precondition(channels == 1 || channels == 3, "grey or RGB")
    precondition(pixels.count == width * height * channels, "pixels has width x height x channels bytes")
    let count = width * height
    if channels == 1 {
      self.init(
        width: width, height: height, luma: pixels, cb: [UInt8](repeating: 128, count: count),
        cr: [UInt8](repeating: 128, count: count))
      return
    }
    var luma = [UInt8](repeating: 0, count: count)
    var cb = luma
    var cr = luma
    for i in 0..<count {
      let (r, g, b) = (Int32(pixels[i * 3]), Int32(pixels[i * 3 + 1]), Int32(pixels[i * 3 + 2]))
      // JFIF's coefficients in 8.8 fixed point (0.299, 0.587, 0.114; -0.1687, -0.3313, 0.5;
      // 0.5, -0.4187, -0.0813), rounded.
      luma[i] = Self.byte((77 * r + 150 * g + 29 * b + 128) >> 8)
      cb[i] = Self.byte(128 + ((-43 * r - 85 * g + 128 * b + 128) >> 8))
      cr[i] = Self.byte(128 + ((128 * r - 107 * g - 21 * b + 128) >> 8))
    }
    self.init(width: width, height: height, luma: luma, cb: cb, cr: cr)
  }

  public var size: PixelSize { PixelSize(width: width, height: height) }

  private static func byte(_ value: Int32) -> UInt8 { UInt8(min(max(value, 0), 255)) }
}
