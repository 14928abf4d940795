import Foundation
import Testing

@testable import ThumbCore

/// Analysis pictures drawn in the test: flat grey with a subject in a rectangle.
private enum Drawn {
  typealias RGB = (UInt8, UInt8, UInt8)

  /// `width` x `height` of `background`, with `subject(x, y)` painted inside `rect` (x, y, w, h).
  static func picture(
    width: Int, height: Int, background: RGB = (128, 128, 128), rect: (x: Int, y: Int, w: Int, h: Int)? = nil,
    subject: (Int, Int) -> RGB = { _, _ in (128, 128, 128) }
  ) -> CropAnalysisImage {
    var pixels = [UInt8](repeating: 0, count: width * height * 3)
    for y in 0..<height {
      for x in 0..<width {
        var colour = background
        if let r = rect, (r.x..<(r.x + r.w)).contains(x), (r.y..<(r.y + r.h)).contains(y) {
          colour = subject(x, y)
        }
        pixels[(y * width + x) * 3] = colour.0
        pixels[(y * width + x) * 3 + 1] = colour.1
        pixels[(y * width + x) * 3 + 2] = colour.2
      }
    }
    return CropAnalysisImage(width: width, height: height, channels: 3, pixels: pixels)
  }

  /// Grey noise from a fixed linear congruential sequence: the most information a patch can hold.
  static func noise(_ x: Int, _ y: Int) -> RGB {
    var v = UInt32(truncatingIfNeeded: x &* 73_856_093 ^ y &* 19_349_663)
    v = v &* 1_664_525 &+ 1_013_904_223
    let g = UInt8(truncatingIfNeeded: v >> 24)
    return (g, g, g)
  }

  static func checker(_ x: Int, _ y: Int) -> RGB { (x / 2 + y / 2) % 2 == 0 ? (20, 20, 20) : (235, 235, 235) }
  static func red(_: Int, _: Int) -> RGB { (220, 30, 30) }
  static func skin(_: Int, _: Int) -> RGB { (224, 172, 140) }
}

/// Whether the window at `origin` of `window` covers the span [start, start + length) on the axis.
private func covers(_ origin: Int, _ window: Int, _ start: Int, _ length: Int) -> Bool {
  origin <= start && origin + window >= start + length
}

private func overlaps(_ origin: Int, _ window: Int, _ start: Int, _ length: Int) -> Bool {
  origin < start + length && start < origin + window
}

@Suite struct SmartCropTests {
  @Test(arguments: ["texture", "saturated colour", "skin"])
  func attentionFindsASubjectInTheLeftThird(kind: String) {
    let paint = ["texture": Drawn.checker, "saturated colour": Drawn.red, "skin": Drawn.skin][kind]!
    // 240x80 flat grey, a 24x24 subject at x 30-54 (the left third), an 80x80 window.
    let image = Drawn.picture(width: 240, height: 80, rect: (30, 28, 24, 24), subject: paint)
    let window = PixelSize(width: 80, height: 80)
    let chosen = SmartCrop.origin(of: window, in: image, strategy: .attention)
    let centre = SmartCrop.centredOrigin(of: window, in: image.size)
    #expect(covers(chosen.x, 80, 30, 24), "\(kind): window at \(chosen)")
    #expect(chosen.y == 0)
    #expect(
      !overlaps(centre.x, 80, 30, 24), "the centre crop must miss the subject for the test to mean anything")
  }

  @Test func entropyFindsDetailAtTheBottomOfATallPicture() {
    // 80x240 flat grey, noise in rows 180-220, an 80x80 window.
    let image = Drawn.picture(width: 80, height: 240, rect: (10, 180, 60, 40), subject: Drawn.noise)
    let window = PixelSize(width: 80, height: 80)
    let chosen = SmartCrop.origin(of: window, in: image, strategy: .entropy)
    #expect(covers(chosen.y, 80, 180, 40), "window at \(chosen)")
    #expect(chosen.x == 0)
    #expect(!overlaps(SmartCrop.centredOrigin(of: window, in: image.size).y, 80, 180, 40))
  }

  /// Both strategies along both axes: a wide picture slides the window across, a tall one down.
  @Test(arguments: [CropStrategy.attention, .entropy], [true, false])
  func bothStrategiesFollowTheSubjectAlongEitherAxis(strategy: CropStrategy, wide: Bool) {
    // A noisy, colourful patch near the far end: 300x100 (or 100x300), the patch at 220-260.
    let paint: (Int, Int) -> Drawn.RGB = { x, y in
      let g = Drawn.noise(x, y).0
      return (g, g / 3, 255 - g)
    }
    let image =
      wide
      ? Drawn.picture(width: 300, height: 100, rect: (220, 30, 40, 40), subject: paint)
      : Drawn.picture(width: 100, height: 300, rect: (30, 220, 40, 40), subject: paint)
    let window = PixelSize(width: 100, height: 100)
    let chosen = SmartCrop.origin(of: window, in: image, strategy: strategy)
    let along = wide ? chosen.x : chosen.y
    let across = wide ? chosen.y : chosen.x
    #expect(covers(along, 100, 220, 40) && across == 0, "\(strategy), wide \(wide): window at \(chosen)")
    // The subject is whole in windows 160-200; the middle of that plateau centres it in the crop... as
    // far as the picture allows (200 is the last position).
    #expect(along == 180)
  }

  @Test(arguments: [CropStrategy.attention, .entropy])
  func aFlatPictureKeepsTheCentreCropExactly(strategy: CropStrategy) {
    let flat = Drawn.picture(width: 257, height: 100, background: (90, 140, 200))
    let window = PixelSize(width: 100, height: 100)
    #expect(SmartCrop.origin(of: window, in: flat, strategy: strategy) == SmartCrop.Origin(x: 78, y: 0))
    // Mapped back, the same Region as the centre crop (not one recomputed from analysis pixels).
    let original = PixelSize(width: 2570, height: 1000)
    let centred = VariantLayout.make(source: original, box: PixelSize(width: 300, height: 300), fit: .cover)
      .region
    #expect(SmartCrop.region(centred, in: original, strategy: strategy, analysis: flat) == centred)
  }

  @Test(arguments: [CropStrategy.attention, .entropy])
  func aSubjectInTheMiddleKeepsTheCentreCrop(strategy: CropStrategy) {
    let image = Drawn.picture(width: 240, height: 80, rect: (100, 20, 40, 40), subject: Drawn.noise)
    let window = PixelSize(width: 80, height: 80)
    #expect(
      SmartCrop.origin(of: window, in: image, strategy: strategy)
        == SmartCrop.centredOrigin(of: window, in: image.size))
  }

  @Test(arguments: [CropStrategy.attention, .entropy])
  func theWindowNeverLeavesThePicture(strategy: CropStrategy) {
    // The subject in the bottom-right corner; windows from one pixel to larger than the picture.
    let image = Drawn.picture(width: 120, height: 90, rect: (100, 75, 20, 15), subject: Drawn.noise)
    for window in [(1, 1), (30, 90), (120, 40), (50, 50), (120, 90), (500, 500)] {
      let size = PixelSize(width: window.0, height: window.1)
      let o = SmartCrop.origin(of: size, in: image, strategy: strategy)
      #expect(o.x >= 0 && o.y >= 0, "window \(size): \(o)")
      #expect(o.x + min(size.width, 120) <= 120 && o.y + min(size.height, 90) <= 90, "window \(size): \(o)")
    }
    // In original pixels too: the region keeps its size and stays inside.
    let original = PixelSize(width: 1200, height: 900)
    let centred = VariantLayout.make(source: original, box: PixelSize(width: 100, height: 300), fit: .cover)
      .region
    let region = SmartCrop.region(centred, in: original, strategy: strategy, analysis: image)
    #expect(region.width == centred.width && region.height == centred.height)
    #expect(region.x >= 0 && region.x + region.width <= 1200 && region.y == 0)
    #expect(abs(region.x - (1200 - region.width)) < 1e-9, "the subject is at the right edge: \(region)")
  }

  @Test func theRegionIsMappedBackToTheOriginal() {
    // The analysis is the original at 2/25: the subject at analysis x 30-54 is original x 375-675.
    let image = Drawn.picture(width: 240, height: 80, rect: (30, 28, 24, 24), subject: Drawn.red)
    let original = PixelSize(width: 3000, height: 1000)
    let centred = VariantLayout.make(source: original, box: PixelSize(width: 256, height: 256), fit: .cover)
      .region
    #expect(centred == Region(x: 1000, y: 0, width: 1000, height: 1000))
    let region = SmartCrop.region(centred, in: original, strategy: .attention, analysis: image)
    #expect(region.x <= 375 && region.x + region.width >= 675, "\(region)")
    #expect(region.y == 0 && region.width == 1000 && region.height == 1000)
    #expect(SmartCrop.region(centred, in: original, strategy: .centre, analysis: image) == centred)
  }

  /// The sliding histogram (a snake over rows and columns) against a count from scratch at every
  /// position, on a window that moves along both axes.
  @Test func slidingEntropyMatchesACountFromScratch() {
    let image = Drawn.picture(width: 23, height: 17, rect: (0, 0, 23, 17)) { x, y in
      let g = Drawn.noise(x, y).0 / 16  // 16 levels, so windows share values
      return (g, g, g)
    }
    let window = PixelSize(width: 9, height: 6)
    let scores = SmartCrop.Entropy.windowScores(image, window: window)
    let columns = 23 - 9 + 1
    #expect(scores.count == columns * (17 - 6 + 1))
    var worst = 0.0
    for y in 0...(17 - 6) {
      for x in 0..<columns {
        var counts = [Int](repeating: 0, count: 256)
        for v in 0..<6 {
          for u in 0..<9 { counts[Int(image.luma[(y + v) * 23 + x + u])] += 1 }
        }
        let entropy = counts.filter { $0 > 0 }.reduce(0.0) { sum, c in
          let p = Double(c) / 54
          return sum - p * log2(p)
        }
        worst = max(worst, abs(entropy - scores[y * columns + x]))
      }
    }
    #expect(worst < 1e-9)
  }

  @Test func eachAttentionCueScoresOnlyItsOwnKindOfPixel() {
    func score(_ paint: (Int, Int) -> Drawn.RGB) -> Int32 {
      let image = Drawn.picture(width: 8, height: 8, rect: (0, 0, 8, 8), subject: paint)
      return SmartCrop.Attention.saliency(image)[3 * 8 + 3]
    }
    #expect(score { _, _ in (128, 128, 128) } == 0)  // flat grey: nothing
    #expect(score { _, _ in (135, 206, 235) } == 0)  // a flat sky: neither saturated enough nor skin
    #expect(score(Drawn.checker) >= 255)  // edges
    #expect(score(Drawn.red) >= 200)  // saturated colour
    #expect(score(Drawn.skin) >= 200)  // light skin
    #expect(score { _, _ in (141, 85, 36) } >= 100)  // dark skin
    #expect(score { _, _ in (30, 20, 15) } == 0)  // too dark to tell skin
  }

  @Test func rgbIsConvertedAsJFIFDoes() {
    let image = CropAnalysisImage(
      width: 3, height: 1, channels: 3, pixels: [255, 0, 0, 0, 255, 0, 255, 255, 255])
    // JFIF (BT.601 full range), rounded: red Y 76, Cb 85, Cr 255; green Y 150, Cb 44, Cr 21; white
    // 255, 128, 128. 8-bit fixed point may be one off.
    let expected: [[Int]] = [[76, 85, 255], [150, 44, 21], [255, 128, 128]]
    for (i, e) in expected.enumerated() {
      let got = [Int(image.luma[i]), Int(image.cb[i]), Int(image.cr[i])]
      #expect(zip(got, e).allSatisfy { abs($0 - $1) <= 1 }, "pixel \(i): \(got), not \(e)")
    }
    #expect(image.cb[2] == 128 && image.cr[2] == 128, "white must be exactly neutral")
  }
}

@Suite struct AnalysisStepTests {
  @Test func analysisComesFromTheSmallestWholeFrameThatIsLargeEnough() {
    let original = PixelSize(width: 3000, height: 2000)
    let variants = Profile.default.variants
    let step = RenderPlanner.analysisStep(original: original, decoded: original, variants: variants)
    #expect(step.output == PixelSize(width: 256, height: 171))
    #expect(step.source == 2)  // small, 320x213: not the square (a crop), not large or medium
  }

  @Test func withoutALargeEnoughWholeFrameTheDecodeServes() {
    let original = PixelSize(width: 3000, height: 2000)
    let covers = [VariantSpec(name: "c", width: 200, height: 200, fit: .cover, format: .jpeg, quality: 80)]
    let fromDecode = RenderPlanner.analysisStep(
      original: original, decoded: PixelSize(width: 750, height: 500), variants: covers)
    #expect(fromDecode.source == nil && fromDecode.output == PixelSize(width: 256, height: 171))
    // Never larger than the decode.
    let tiny = RenderPlanner.analysisStep(
      original: original, decoded: PixelSize(width: 150, height: 100), variants: covers)
    #expect(tiny.output == PixelSize(width: 150, height: 100))
  }
}
