public import ThumbCore

/// An 8-bit interleaved image (RGB, or grey with one channel) in one contiguous array, rows packed.
public struct PixelBuffer: Sendable {
  public var width: Int
  public var height: Int
  public var channels: Int
  public var pixels: [UInt8]

  public init(width: Int, height: Int, channels: Int, pixels: [UInt8]) {
    precondition(pixels.count == width * height * channels, "pixel count does not match the size")
    self.width = width
    self.height = height
    self.channels = channels
    self.pixels = pixels
  }

  public init(width: Int, height: Int, channels: Int) {
    self.init(
      width: width, height: height, channels: channels,
      pixels: [UInt8](repeating: 0, count: width * height * channels))
  }

  public var size: PixelSize { PixelSize(width: width, height: height) }
  public var rowBytes: Int { width * channels }
}
