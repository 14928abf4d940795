import Foundation
import Testing
import ThumbCore

@testable import Imaging

/// The integer box before the Lanczos step (BoxRows): its factors, its exact means at every edge, and
/// that it changes smooth pictures by no more than rounding.
@Suite struct BoxReductionTests {
  @Test(arguments: [(1.0, 1), (2.4, 1), (2.99, 1), (3.0, 2), (3.2, 2), (3.52, 2), (4.5, 3), (6.4, 4)])
  func theBoxLeavesALanczosStepOfAtLeastTheGap(scale: Double, factor: Int) {
    #expect(Resampler.boxFactor(sourceSamplesPerOutput: scale, gap: 1.5) == factor)
  }

  @Test(arguments: [(3.9, 1), (4.0, 2), (5.9, 2), (6.0, 3)])
  func lumaKeepsAGapOfTwo(scale: Double, factor: Int) {
    #expect(Resampler.boxFactor(sourceSamplesPerOutput: scale, gap: 2) == factor)
  }

  /// Deterministic bytes that vary from sample to sample (a box of them is not trivially flat).
  static func noise(width: Int, height: Int, stride: Int) -> Plane {
    var plane = Plane(width: width, height: height, stride: stride)
    plane.withUnsafeMutableBufferPointer { p in
      var state: UInt32 = 12345
      for i in 0..<p.count {
        state = state &* 1_103_515_245 &+ 12345
        p[i] = UInt8(truncatingIfNeeded: state >> 16)
      }
    }
    return plane
  }

  /// The mean of the block's samples that exist, rounded half up, the slow way.
  static func expectedMean(_ plane: Plane, x: Int, y: Int, fx: Int, fy: Int) -> UInt8 {
    plane.withUnsafeBufferPointer { p in
      var (sum, n) = (0, 0)
      for yy in (y * fy)..<min((y + 1) * fy, plane.height) {
        for xx in (x * fx)..<min((x + 1) * fx, plane.width) {
          sum += Int(p[yy * plane.stride + xx])
          n += 1
        }
      }
      return UInt8((sum + n / 2) / n)
    }
  }

  // Widths past 32 reduced samples take the vector path; odd sizes leave partial blocks at both edges.
  @Test(arguments: [(2, 2), (2, 4), (2, 3), (3, 3), (4, 9), (5, 2)])
  func everyReducedSampleIsTheMeanOfItsBlock(fx: Int, fy: Int) {
    let plane = Self.noise(
      width: 16 * fx * 2 + 2 * fx + 1, height: 5 * fy + 1, stride: 16 * fx * 2 + 2 * fx + 9)
    plane.withUnsafeBufferPointer { p in
      let reducedWidth = (plane.width + fx - 1) / fx
      let box = BoxRows(
        source: p.baseAddress!, stride: plane.stride, width: plane.width, height: plane.height, factorX: fx,
        factorY: fy, columns: 0..<reducedWidth, slots: 3)
      #expect(box.width == reducedWidth && box.height == 6)
      for y in 0..<box.height {
        let row = box.row(y)
        let mismatches = (0..<reducedWidth).filter {
          row[$0] != Self.expectedMean(plane, x: $0, y: y, fx: fx, fy: fy)
        }
        #expect(mismatches.isEmpty, "row \(y): columns \(mismatches)")
      }
    }
  }

  @Test func onlyTheColumnsAskedForAreMadeAndRowsComeBackFromTheRing() {
    let plane = Self.noise(width: 200, height: 40, stride: 200)
    plane.withUnsafeBufferPointer { p in
      let box = BoxRows(
        source: p.baseAddress!, stride: 200, width: 200, height: 40, factorX: 2, factorY: 2, columns: 37..<81,
        slots: 4)
      for y in [0, 1, 2, 3, 2, 4, 5, 19] {
        let row = box.row(y)
        #expect((37..<81).allSatisfy { row[$0] == Self.expectedMean(plane, x: $0, y: y, fx: 2, fy: 2) })
      }
    }
  }

  /// A smooth picture: the box's blur stays far below what a thumbnail shows.
  @Test func onSmoothPicturesTheBoxChangesNothingButRounding() {
    let (w, h) = (1641, 923)
    var plane = Plane(width: w, height: h)
    plane.withUnsafeMutableBufferPointer { p in
      for y in 0..<h {
        for x in 0..<w {
          let wave = 60 * Foundation.sin(Double(x) / 97) * Foundation.cos(Double(y) / 71)
          let v = 128 + wave + 40 * Double(x) / Double(w)
          p[y * w + x] = UInt8(v.rounded())
        }
      }
    }
    let output = PixelSize(width: 512, height: 288)  // 3.2x: a box of 2, then Lanczos 1.6x
    let withBox = Resampler.resample(plane, region: Region(plane.size), to: output, gap: 1.5)
    let without = Resampler.resample(plane, region: Region(plane.size), to: output, gap: nil)
    let differences = zip(withBox.bytes, without.bytes).map { abs(Int($0) - Int($1)) }
    #expect(differences.max()! <= 1)
  }

  /// Noise, the worst case (all of its contrast near the sampling frequency) at 3.2x: the samples differ
  /// (what aliases differs), but the box neither shifts the mean nor softens or sharpens the result.
  @Test func onNoiseTheBoxKeepsTheMeanAndTheContrast() {
    let plane = Self.noise(width: 1600, height: 960, stride: 1600)
    let output = PixelSize(width: 500, height: 300)
    let withBox = Resampler.resample(plane, region: Region(plane.size), to: output, gap: 1.5).bytes
    let without = Resampler.resample(plane, region: Region(plane.size), to: output, gap: nil).bytes
    func statistics(_ bytes: [UInt8]) -> (mean: Double, deviation: Double) {
      let values = bytes.map(Double.init)
      let mean = values.reduce(0, +) / Double(values.count)
      let variance = values.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(values.count)
      return (mean, variance.squareRoot())
    }
    let (boxed, plain) = (statistics(withBox), statistics(without))
    #expect(abs(boxed.mean - plain.mean) < 0.5)
    let kept = boxed.deviation / plain.deviation
    #expect(abs(kept - 1) < 0.05, "contrast kept: \(kept)")
  }
}
