import Foundation
import ThumbCore

/// The Lanczos-3 taps of one axis: for each output sample, the first source sample it reads and the
/// weights of the samples from there on.
///
/// Lanczos-3 is the windowed sinc that photo thumbnailers use for downscaling (libvips' default and
/// Pillow's LANCZOS): sharp without the ringing of wider windows. When shrinking, the kernel is stretched
/// by the scale so every source sample contributes (no aliasing). Taps that fall outside the image are
/// dropped and the rest renormalised, so edges are neither darkened nor smeared.
struct FilterWeights {
  /// Weights per output sample, padded with zeros to a multiple of `lanes` so the horizontal pass can
  /// read whole vectors.
  let taps: Int
  /// Source samples actually weighted per output (the vertical pass reads only these rows).
  var counts: [Int]
  var starts: [Int]
  var weights: [Float]

  static let lanes = 8

  init(sourceLength: Int, start: Double, length: Double, outputLength: Int) {
    let scale = length / Double(outputLength)
    let stretch = max(1, scale)
    let support = 3 * stretch
    let maxTaps = Int((support * 2).rounded(.up)) + 2
    taps = (maxTaps + Self.lanes - 1) / Self.lanes * Self.lanes
    starts = []
    counts = []
    starts.reserveCapacity(outputLength)
    counts.reserveCapacity(outputLength)
    weights = [Float](repeating: 0, count: taps * outputLength)
    var real = [Double](repeating: 0, count: maxTaps)
    for i in 0..<outputLength {
      let centre = start + (Double(i) + 0.5) * scale
      var lo = max(0, Int((centre - support).rounded(.down)))
      var hi = min(sourceLength, Int((centre + support).rounded(.up)), lo + maxTaps)
      if hi <= lo {  // a region at the very edge: take the nearest sample
        lo = min(max(0, Int(centre)), sourceLength - 1)
        hi = lo + 1
      }
      var sum = 0.0
      for j in lo..<hi {
        let w = Self.lanczos3((Double(j) + 0.5 - centre) / stretch)
        real[j - lo] = w
        sum += w
      }
      if sum == 0 {  // every tap at a zero of the kernel (cannot happen for a sane region): average
        for j in 0..<(hi - lo) { real[j] = 1 }
        sum = Double(hi - lo)
      }
      // Trim zero taps at both ends: the vertical pass then reads fewer rows.
      while hi - lo > 1 && real[0] == 0 {
        real.removeFirst()
        real.append(0)
        lo += 1
      }
      while hi - lo > 1 && real[hi - lo - 1] == 0 { hi -= 1 }
      for k in 0..<(hi - lo) { weights[i * taps + k] = Float(real[k] / sum) }
      starts.append(lo)
      counts.append(hi - lo)
    }
  }

  /// 3 sin(pi x) sin(pi x / 3) / (pi x)^2 on |x| < 3, read from a table by linear interpolation: an
  /// image's weights take tens of thousands of kernel values, and the sines were 2% of a whole
  /// thumbnail run. With 4096 samples per unit the interpolation is off by less than 1e-7, far below
  /// a Float weight's precision.
  static func lanczos3(_ x: Double) -> Double {
    let position = abs(x) * Double(tableResolution)
    let index = Int(position)
    if index >= 3 * tableResolution { return 0 }
    let fraction = position - Double(index)
    return table[index] + (table[index + 1] - table[index]) * fraction
  }

  private static let tableResolution = 4096
  private static let table: [Double] = (0...(3 * tableResolution + 1)).map {
    exactLanczos3(Double($0) / Double(tableResolution))
  }

  /// The kernel itself, with one sine: for t = pi x / 3, sin(3t) = 3 sin t - 4 sin^3 t.
  static func exactLanczos3(_ x: Double) -> Double {
    let ax = abs(x)
    if ax < 1e-9 { return 1 }
    if ax >= 3 { return 0 }
    let t = Double.pi * x / 3
    let s = sin(t)
    return (3 * s - 4 * s * s * s) * s / (3 * t * t)
  }

  var firstSource: Int { starts.min() ?? 0 }
  var lastSourceEnd: Int { zip(starts, counts).map { $0 + $1 }.max() ?? 0 }
}
