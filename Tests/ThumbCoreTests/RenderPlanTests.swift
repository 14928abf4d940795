import Foundation
import Testing
import ThumbCore

@testable import ThumbCore

@Suite struct RenderPlanTests {
  let variants = Profile.default.variants

  @Test(arguments: [
    (PixelSize(width: 5640, height: 3172), 1),  // 1600/5640 needs 0.28: even 1/2 would leave < 2x
    (PixelSize(width: 8000, height: 6000), 2),
    (PixelSize(width: 16000, height: 12000), 4),
    (PixelSize(width: 32000, height: 24000), 8),
    (PixelSize(width: 800, height: 600), 1),
  ])
  func decodeScaleLeavesTwiceTheDetail(source: PixelSize, expected: Int) {
    #expect(RenderPlanner.decodeDenominator(source: source, variants: variants) == expected)
  }

  @Test func smallProfileAllowsDeepShrink() {
    let thumbOnly = [
      VariantSpec(name: "t", width: 100, height: 100, fit: .inside, format: .jpeg, quality: 80)
    ]
    #expect(
      RenderPlanner.decodeDenominator(source: PixelSize(width: 4000, height: 3000), variants: thumbOnly) == 8)
  }

  @Test func cascadesLargestFirstFromAdequateResults() {
    let original = PixelSize(width: 4000, height: 3000)
    let steps = RenderPlanner.steps(original: original, decoded: original, variants: variants)
    // Largest demand first: the square needs 256 of 3000 rows (0.085), more than small's 320 of 4000.
    #expect(steps.map(\.variant) == [0, 1, 3, 2])
    let byVariant = Dictionary(uniqueKeysWithValues: steps.map { ($0.variant, $0) })
    #expect(byVariant[0]?.source == nil)  // large from the decode
    #expect(byVariant[1]?.source == 0)  // medium (800) from large (1600): exactly 2x
    #expect(byVariant[2]?.source == 1)  // small (320) from medium (800)
    // The square from medium (600 rows >= 2 x 256), cropped to its centre.
    #expect(byVariant[3]?.source == 1)
    #expect(byVariant[3]?.region == Region(x: 100, y: 0, width: 600, height: 600))
    #expect(byVariant[2]?.output == PixelSize(width: 320, height: 240))
    #expect(byVariant[3]?.output == PixelSize(width: 256, height: 256))
  }

  /// 5640x3172 makes large 1600x900, which is 2x medium's 800x450 across but 0.016% short of it down:
  /// medium still comes from large, not from the full decode.
  @Test func aResultShortOfTwiceByRoundingStillFeedsTheNext() {
    let original = PixelSize(width: 5640, height: 3172)
    let steps = RenderPlanner.steps(original: original, decoded: original, variants: variants)
    let byVariant = Dictionary(uniqueKeysWithValues: steps.map { ($0.variant, $0) })
    #expect(byVariant[0]?.output == PixelSize(width: 1600, height: 900))
    #expect(byVariant[1]?.source == 0)
    // Well short of 2x is still refused: 1600x900 cannot feed a 1000-wide variant.
    let wide =
      variants + [VariantSpec(name: "w", width: 1000, height: 1000, fit: .inside, format: .jpeg, quality: 80)]
    let wideSteps = RenderPlanner.steps(original: original, decoded: original, variants: wide)
    #expect(wideSteps.first { $0.variant == 4 }?.source == nil)
  }

  /// The ThumbHash's picture is a step of the cascade, not a variant: the last, made from the smallest
  /// whole frame with twice its detail.
  @Test func theThumbHashIsOneMoreStepOfTheCascade() {
    let original = PixelSize(width: 4000, height: 3000)
    let steps = RenderPlanner.steps(
      original: original, decoded: original, variants: variants, thumbHash: true)
    #expect(steps.map(\.variant) == [0, 1, 3, 2, 4])
    #expect(steps.map(\.thumbHash) == [false, false, false, false, true])
    #expect(steps.last?.source == 2, "from small (320x240), at least 2x its 100x75")
    #expect(steps.last?.output == PixelSize(width: 100, height: 75))
    #expect(
      Array(steps.dropLast())
        == RenderPlanner.steps(original: original, decoded: original, variants: variants),
      "the variants' steps do not change")
  }

  @Test func regionsMapIntoAScaledDecode() {
    let original = PixelSize(width: 8000, height: 6000)
    let decoded = PixelSize(width: 4000, height: 3000)
    let steps = RenderPlanner.steps(original: original, decoded: decoded, variants: variants)
    #expect(steps[0].region == Region(x: 0, y: 0, width: 4000, height: 3000))
    #expect(steps[0].output == PixelSize(width: 1600, height: 1200))
  }
}

@Suite struct DecodePlanTests {
  let defaultVariants = Profile.default.variants

  @Test func requiredScaleIsTheLargestVariantsNeed() {
    // 1600 of 6400 for large; square needs 256 of 3200 (the short side).
    #expect(
      RenderPlanner.requiredScale(source: PixelSize(width: 6400, height: 3200), variants: defaultVariants)
        == 0.25)
    #expect(
      RenderPlanner.requiredScale(source: PixelSize(width: 800, height: 600), variants: defaultVariants) == 1)
  }

  @Test func reducedDecodeLeavesTheMargin() {
    let size = PixelSize(width: 4000, height: 3000)
    #expect(RenderPlanner.reducedDecodeSize(size, requiredScale: 0.1) == PixelSize(width: 800, height: 600))
    #expect(RenderPlanner.reducedDecodeSize(size, requiredScale: 0.5) == nil)
    #expect(RenderPlanner.reducedDecodeSize(size, requiredScale: 0.6) == nil)
  }

  @Test func embeddedThumbnailOnlyWhenLargeEnough() {
    let sizes = [
      PixelSize(width: 320, height: 240), PixelSize(width: 1024, height: 768),
      PixelSize(width: 640, height: 480),
    ]
    #expect(RenderPlanner.embeddedThumbnail(sizes: sizes, needed: PixelSize(width: 600, height: 450)) == 2)
    #expect(RenderPlanner.embeddedThumbnail(sizes: sizes, needed: PixelSize(width: 700, height: 400)) == 1)
    #expect(
      RenderPlanner.embeddedThumbnail(sizes: sizes, needed: PixelSize(width: 1600, height: 1200)) == nil)
    #expect(RenderPlanner.embeddedThumbnail(sizes: [], needed: PixelSize(width: 1, height: 1)) == nil)
  }

  @Test func fillStretchesWithoutUpscaling() {
    let layout = VariantLayout.make(
      source: PixelSize(width: 1000, height: 500), box: PixelSize(width: 300, height: 300), fit: .fill)
    #expect(layout.output == PixelSize(width: 300, height: 300))
    #expect(layout.region == Region(PixelSize(width: 1000, height: 500)))
    let small = VariantLayout.make(
      source: PixelSize(width: 200, height: 500), box: PixelSize(width: 300, height: 300), fit: .fill)
    #expect(small.output == PixelSize(width: 200, height: 300))
  }
}
