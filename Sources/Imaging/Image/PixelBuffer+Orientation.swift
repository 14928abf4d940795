public import ThumbCore

extension PixelBuffer {
  /// The picture turned upright. Done on the decoded (already scaled-down) image, so it is cheap next to
  /// decoding and resampling, and every later step works in upright coordinates.
  public func oriented(_ orientation: Orientation) -> PixelBuffer {
    if orientation == .up { return self }
    let out = orientation.uprightSize(of: size)
    let c = channels
    let w = width
    let h = height
    var result = [UInt8](repeating: 0, count: out.pixels * c)
    pixels.withUnsafeBufferPointer { src in
      result.withUnsafeMutableBufferPointer { dst in
        for y in 0..<out.height {
          var d = y * out.width * c
          for x in 0..<out.width {
            let s = orientation.storedCoordinate(x: x, y: y, w: w, h: h)
            var si = (s.y * w + s.x) * c
            for _ in 0..<c {
              dst[d] = src[si]
              d += 1
              si += 1
            }
          }
        }
      }
    }
    return PixelBuffer(width: out.width, height: out.height, channels: c, pixels: result)
  }
}
