import Foundation
public import Imaging

/// Mean absolute difference per sample between two same-sized images (infinity when the sizes differ).
public func meanDifference(_ a: PixelBuffer, _ b: PixelBuffer) -> Double {
  guard a.pixels.count == b.pixels.count else { return .infinity }
  var total = 0
  for i in 0..<a.pixels.count { total += abs(Int(a.pixels[i]) - Int(b.pixels[i])) }
  return Double(total) / Double(a.pixels.count)
}

/// Mean SSIM of two same-sized images' luma (over mid grey where they are transparent), on 8x8
/// windows 4 pixels apart (1 for an image too small for a window; -1 when the sizes differ).
public func ssim(_ a: PixelBuffer, _ b: PixelBuffer) -> Double {
  guard a.width == b.width, a.height == b.height else { return -1 }
  func luma(_ p: PixelBuffer) -> [Double] {
    (0..<(p.width * p.height)).map { i in
      var rgb = [0.0, 0.0, 0.0]
      for c in 0..<3 { rgb[c] = Double(p.pixels[i * p.channels + min(c, p.channels - 1)]) }
      if p.channels == 4 || p.channels == 2 {
        let alpha = Double(p.pixels[i * p.channels + p.channels - 1]) / 255
        rgb = rgb.map { $0 * alpha + 128 * (1 - alpha) }
      }
      return 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]
    }
  }
  let (x, y) = (luma(a), luma(b))
  let (c1, c2) = (2.55 * 2.55, 7.65 * 7.65)  // (0.01 x 255)², (0.03 x 255)²
  let side = min(8, a.width, a.height)
  var total = 0.0
  var windows = 0
  for top in stride(from: 0, through: a.height - side, by: 4) {
    for left in stride(from: 0, through: a.width - side, by: 4) {
      var (sx, sy, sxx, syy, sxy) = (0.0, 0.0, 0.0, 0.0, 0.0)
      for row in top..<(top + side) {
        for column in left..<(left + side) {
          let (p, q) = (x[row * a.width + column], y[row * a.width + column])
          sx += p
          sy += q
          sxx += p * p
          syy += q * q
          sxy += p * q
        }
      }
      let n = Double(side * side)
      let (mx, my) = (sx / n, sy / n)
      let (vx, vy, cov) = (sxx / n - mx * mx, syy / n - my * my, sxy / n - mx * my)
      total += (2 * mx * my + c1) * (2 * cov + c2) / ((mx * mx + my * my + c1) * (vx + vy + c2))
      windows += 1
    }
  }
  return windows == 0 ? 1 : total / Double(windows)
}
