import Foundation
public import ThumbCore

/// A separable Lanczos-3 resampler on 8-bit images, in 14-bit fixed point.
///
/// Lanczos-3 is the windowed sinc that photo thumbnailers use for downscaling (libvips' default and
/// Pillow's LANCZOS): sharp without the ringing of wider windows. When shrinking, the kernel is stretched
/// by the scale so every source pixel contributes (no aliasing). Taps that fall outside the image are
/// dropped and the remaining weights renormalised, so edges are neither darkened nor smeared.
public enum Resampler {
  static let fractionBits = 14
  static let one = Int32(1) << fractionBits

  /// Resamples `region` of `image` (fractional source pixels) to exactly `output`.
  public static func resample(_ image: PixelBuffer, region: Region, to output: PixelSize) -> PixelBuffer {
    let horizontal = Weights(
      sourceLength: image.width, start: region.x, length: region.width, outputLength: output.width)
    let vertical = Weights(
      sourceLength: image.height, start: region.y, length: region.height, outputLength: output.height)
    // Only the rows the vertical pass reads need the horizontal pass.
    let firstRow = vertical.firstSource
    let rowCount = vertical.lastSourceEnd - firstRow
    let c = image.channels
    var temp = [UInt8](repeating: 0, count: output.width * rowCount * c)
    image.pixels.withUnsafeBufferPointer { src in
      temp.withUnsafeMutableBufferPointer { dst in
        for row in 0..<rowCount {
          horizontal.apply(
            source: src.baseAddress! + (firstRow + row) * image.rowBytes, sourceStride: c,
            destination: dst.baseAddress! + row * output.width * c, destinationStride: c, channels: c)
        }
      }
    }
    var result = [UInt8](repeating: 0, count: output.pixels * c)
    temp.withUnsafeBufferPointer { src in
      result.withUnsafeMutableBufferPointer { dst in
        vertical.applyVertically(
          source: src.baseAddress!, firstRow: firstRow, rowBytes: output.width * c,
          destination: dst.baseAddress!)
      }
    }
    return PixelBuffer(width: output.width, height: output.height, channels: c, pixels: result)
  }

  static func lanczos3(_ x: Double) -> Double {
    let ax = abs(x)
    if ax < 1e-9 { return 1 }
    if ax >= 3 { return 0 }
    let px = Double.pi * x
    return 3 * sin(px) * sin(px / 3) / (px * px)
  }

  /// The filter taps of one axis: for each output index, where its taps start and their weights.
  struct Weights {
    let taps: Int
    var starts: [Int]
    var counts: [Int]
    var values: [Int32]

    init(sourceLength: Int, start: Double, length: Double, outputLength: Int) {
      let scale = length / Double(outputLength)
      let stretch = max(1, scale)
      let support = 3 * stretch
      taps = Int((support * 2).rounded(.up)) + 2
      starts = []
      counts = []
      values = [Int32](repeating: 0, count: taps * outputLength)
      var real = [Double](repeating: 0, count: taps)
      for i in 0..<outputLength {
        let centre = start + (Double(i) + 0.5) * scale
        let lo = max(0, Int((centre - support).rounded(.down)))
        let hi = min(sourceLength, Int((centre + support).rounded(.up)), lo + taps)
        var sum = 0.0
        for j in lo..<hi {
          let w = lanczos3((Double(j) + 0.5 - centre) / stretch)
          real[j - lo] = w
          sum += w
        }
        // Fixed point, with the rounding error put on the largest tap so each row sums exactly to one.
        var total: Int32 = 0
        var largest = 0
        for k in 0..<(hi - lo) {
          let v = Int32((real[k] / sum * Double(Resampler.one)).rounded())
          values[i * taps + k] = v
          total += v
          if abs(real[k]) > abs(real[largest]) { largest = k }
        }
        values[i * taps + largest] += Resampler.one - total
        starts.append(lo)
        counts.append(hi - lo)
      }
    }

    var firstSource: Int { starts.min() ?? 0 }
    var lastSourceEnd: Int { zip(starts, counts).map { $0 + $1 }.max() ?? 0 }

    /// One row: output pixel i = sum over taps of source pixel (starts[i] + k).
    func apply(
      source: UnsafePointer<UInt8>, sourceStride: Int, destination: UnsafeMutablePointer<UInt8>,
      destinationStride: Int, channels: Int
    ) {
      values.withUnsafeBufferPointer { w in
        let half = Int32(1) << (Resampler.fractionBits - 1)
        for i in 0..<starts.count {
          let wBase = i * taps
          var p = source + starts[i] * sourceStride
          let n = counts[i]
          if channels == 3 {
            var a0 = half
            var a1 = half
            var a2 = half
            for k in 0..<n {
              let wk = w[wBase + k]
              a0 &+= Int32(p[0]) &* wk
              a1 &+= Int32(p[1]) &* wk
              a2 &+= Int32(p[2]) &* wk
              p += sourceStride
            }
            let d = destination + i * destinationStride
            d[0] = clampToByte(a0)
            d[1] = clampToByte(a1)
            d[2] = clampToByte(a2)
          } else {
            for ch in 0..<channels {
              var acc = half
              var q = p + ch
              for k in 0..<n {
                acc &+= Int32(q[0]) &* w[wBase + k]
                q += sourceStride
              }
              destination[i * destinationStride + ch] = clampToByte(acc)
            }
          }
        }
      }
    }

    /// The vertical pass over whole rows: each output row is a weighted sum of source rows, computed
    /// row-wise so memory is read sequentially.
    func applyVertically(
      source: UnsafePointer<UInt8>, firstRow: Int, rowBytes: Int, destination: UnsafeMutablePointer<UInt8>
    ) {
      var accumulator = [Int32](repeating: 0, count: rowBytes)
      let half = Int32(1) << (Resampler.fractionBits - 1)
      values.withUnsafeBufferPointer { w in
        accumulator.withUnsafeMutableBufferPointer { acc in
          for i in 0..<starts.count {
            for x in 0..<rowBytes { acc[x] = half }
            for k in 0..<counts[i] {
              let wk = w[i * taps + k]
              let row = source + (starts[i] + k - firstRow) * rowBytes
              for x in 0..<rowBytes { acc[x] &+= Int32(row[x]) &* wk }
            }
            let out = destination + i * rowBytes
            for x in 0..<rowBytes { out[x] = clampToByte(acc[x]) }
          }
        }
      }
    }
  }
}

@inline(__always)
private func clampToByte(_ fixed: Int32) -> UInt8 {
  let v = fixed >> Resampler.fractionBits
  return UInt8(truncatingIfNeeded: v < 0 ? 0 : (v > 255 ? 255 : v))
}
