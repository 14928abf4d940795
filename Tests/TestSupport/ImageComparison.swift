public import Imaging

/// Mean absolute difference per sample between two same-sized images (infinity when the sizes differ).
public func meanDifference(_ a: PixelBuffer, _ b: PixelBuffer) -> Double {
  guard a.pixels.count == b.pixels.count else { return .infinity }
  var total = 0
  for i in 0..<a.pixels.count { total += abs(Int(a.pixels[i]) - Int(b.pixels[i])) }
  return Double(total) / Double(a.pixels.count)
}
