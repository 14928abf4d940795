/// A size in whole pixels.
public struct PixelSize: Hashable, Sendable, CustomStringConvertible {
  public var width: Int
  public var height: Int

  public init(width: Int, height: Int) {
    self.width = width
    self.height = height
  }

  public var pixels: Int { width * height }
  public var transposed: PixelSize { PixelSize(width: height, height: width) }
  public var description: String { "\(width)x\(height)" }
}

/// A rectangle in continuous pixel coordinates: resampling works on fractional regions so that a
/// centre crop stays centred to the sub-pixel.
public struct Region: Hashable, Sendable {
  public var x: Double
  public var y: Double
  public var width: Double
  public var height: Double

  public init(x: Double, y: Double, width: Double, height: Double) {
    self.x = x
    self.y = y
    self.width = width
    self.height = height
  }

  public init(_ size: PixelSize) {
    self.init(x: 0, y: 0, width: Double(size.width), height: Double(size.height))
  }

  /// The same region in an image scaled by (sx, sy).
  public func scaled(x sx: Double, y sy: Double) -> Region {
    Region(x: x * sx, y: y * sy, width: width * sx, height: height * sy)
  }
}

/// What one variant takes from the (upright, full-resolution) source and what it becomes.
public struct VariantLayout: Hashable, Sendable {
  /// The part of the source the variant shows, in source pixels.
  public var region: Region
  /// The size of the encoded variant.
  public var output: PixelSize

  /// Output pixels per source pixel, on the axis that shrinks least (the one that needs most detail).
  public var scale: Double {
    max(Double(output.width) / region.width, Double(output.height) / region.height)
  }

  /// Where a variant sits in the source for a given fit. Never upscales: a source smaller than the box
  /// keeps its own size (`inside`), or a box shrunk to fit the source with the box's aspect (`cover`).
  public static func make(source: PixelSize, box: PixelSize, fit: Fit) -> VariantLayout {
    let w = Double(source.width)
    let h = Double(source.height)
    switch fit {
    case .inside:
      let scale = min(1, Double(box.width) / w, Double(box.height) / h)
      let output = PixelSize(
        width: clamp(Int((w * scale).rounded()), 1, source.width),
        height: clamp(Int((h * scale).rounded()), 1, source.height))
      return VariantLayout(region: Region(source), output: output)
    case .cover:
      // Shrink the box (keeping its aspect) until the source can fill it without upscaling.
      let fitFactor = min(1, w / Double(box.width), h / Double(box.height))
      let output = PixelSize(
        width: clamp(Int((Double(box.width) * fitFactor).rounded()), 1, source.width),
        height: clamp(Int((Double(box.height) * fitFactor).rounded()), 1, source.height))
      let scale = max(Double(output.width) / w, Double(output.height) / h)
      let cropW = min(w, Double(output.width) / scale)
      let cropH = min(h, Double(output.height) / scale)
      let region = Region(x: (w - cropW) / 2, y: (h - cropH) / 2, width: cropW, height: cropH)
      return VariantLayout(region: region, output: output)
    case .fill:
      let output = PixelSize(width: min(box.width, source.width), height: min(box.height, source.height))
      return VariantLayout(region: Region(source), output: output)
    }
  }
}

@inline(__always)
func clamp(_ value: Int, _ low: Int, _ high: Int) -> Int {
  min(max(value, low), high)
}
