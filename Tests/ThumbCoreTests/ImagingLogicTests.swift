import Foundation
import Testing
import ThumbCore

@Suite struct ThumbHashTests {
  /// A 32x24 gradient with a diagonal edge, as the tests elsewhere draw it.
  func gradient(alpha: (Int, Int) -> UInt8 = { _, _ in 255 }) -> [UInt8] {
    var rgba: [UInt8] = []
    for y in 0..<24 {
      for x in 0..<32 {
        rgba += [UInt8(x * 255 / 31), UInt8(y * 255 / 23), x > y ? 200 : 40, alpha(x, y)]
      }
    }
    return rgba
  }

  @Test func matchesAnIndependentEncoder() {
    // The same pixels through the `thumbhash` package on PyPI (a port of the reference encoder).
    #expect(ThumbHash.encodeBase64(width: 32, height: 24, rgba: gradient()) == "oPcRbZpwd3eFd3iIeHeIiIlgCPh3")
  }

  @Test func keepsTheAverageColourAndTheAspect() throws {
    let red = [UInt8](repeating: 0, count: 40 * 10 * 4).enumerated().map { i, _ in
      i % 4 == 0 || i % 4 == 3 ? UInt8(255) : 0
    }
    let hash = ThumbHash.encode(width: 40, height: 10, rgba: red)
    let average = try #require(ThumbHash.averageColor(hash))
    #expect(average.r > 0.9 && average.g < 0.1 && average.b < 0.1)
    #expect(hash[4] & 0x80 != 0)  // the landscape bit
    let tall = ThumbHash.encode(width: 10, height: 40, rgba: red)
    #expect(tall[4] & 0x80 == 0)
  }

  @Test func transparencyAddsTheAlphaBytes() {
    let opaque = ThumbHash.encode(width: 32, height: 24, rgba: gradient())
    let holed = ThumbHash.encode(
      width: 32, height: 24,
      rgba: gradient { x, y in (x - 16) * (x - 16) + (y - 12) * (y - 12) < 100 ? 255 : 0 })
    #expect(opaque[2] & 0x80 == 0)
    #expect(holed[2] & 0x80 != 0)  // hasAlpha
    #expect(opaque.count <= 25 && holed.count <= 25)
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

@Suite struct StoredRegionTests {
  /// A region of the upright picture, mapped to stored coordinates, must cover the stored pixels that
  /// show there: checked pixel by pixel against storedCoordinate for every orientation.
  @Test(arguments: Orientation.allCases)
  func mapsRegionsLikeStoredCoordinate(orientation: Orientation) {
    let stored = PixelSize(width: 7, height: 4)
    let upright = orientation.uprightSize(of: stored)
    let region = Region(x: 1, y: 2, width: 3, height: 1)  // upright pixels x 1...3, y 2
    let mapped = orientation.storedRegion(region, upright: upright)
    for x in 1...3 {
      let p = orientation.storedCoordinate(x: x, y: 2, w: stored.width, h: stored.height)
      let (cx, cy) = (Double(p.x) + 0.5, Double(p.y) + 0.5)
      #expect(cx > mapped.x && cx < mapped.x + mapped.width, "\(orientation) x \(x)")
      #expect(cy > mapped.y && cy < mapped.y + mapped.height, "\(orientation) x \(x)")
    }
    #expect(mapped.width * mapped.height == 3)
  }
}

@Suite struct JPEGSegmentTests {
  func segment(_ marker: UInt8, _ payload: [UInt8]) -> [UInt8] {
    [0xFF, marker, UInt8((payload.count + 2) >> 8), UInt8((payload.count + 2) & 255)] + payload
  }
  func iccChunk(_ sequence: UInt8, of count: UInt8, _ bytes: [UInt8]) -> [UInt8] {
    segment(0xE2, Array("ICC_PROFILE".utf8) + [0, sequence, count] + bytes)
  }

  @Test func joinsICCChunksInSequenceOrder() {
    let jpeg =
      [0xFF, 0xD8] + iccChunk(2, of: 2, [4, 5]) + segment(0xE1, [1, 2]) + iccChunk(1, of: 2, [1, 2, 3])
      + [0xFF, 0xDA, 0, 2]
    #expect(JPEGSegments.iccProfile(jpeg) == [1, 2, 3, 4, 5])
  }

  @Test func refusesIncompleteOrRepeatedProfiles() {
    let start: [UInt8] = [0xFF, 0xD8]
    #expect(JPEGSegments.iccProfile(start + iccChunk(1, of: 2, [1])) == nil)
    #expect(JPEGSegments.iccProfile(start + iccChunk(1, of: 1, [1]) + iccChunk(1, of: 1, [2])) == nil)
    #expect(JPEGSegments.iccProfile(start + iccChunk(0, of: 1, [1])) == nil)
    #expect(JPEGSegments.iccProfile(start + segment(0xE0, [1])) == nil)
    #expect(JPEGSegments.iccProfile(Array(repeating: 0xFF, count: 9)) == nil)
  }
}

@Suite struct CostModelFormatTests {
  let variants = Profile.default.variants

  @Test func interleavedDecodesCountBothBuffersAndTheCodec() {
    let size = PixelSize(width: 4000, height: 3000)
    let png = MemoryCostModel.interleavedDecode(
      format: .png, stored: size, orientation: .up, hasAlpha: true, compressedBytes: 1_000_000,
      variants: variants)
    #expect(png.decoded == 48_000_000 && png.interleaved == 48_000_000 && png.codec == 0)
    #expect(png.compressed == 2_000_000)  // the decoder's own copy of the file
    let heic = MemoryCostModel.interleavedDecode(
      format: .heif, stored: size, orientation: .up, hasAlpha: false, compressedBytes: 1, variants: variants)
    #expect(heic.codec == 36_000_000 && heic.decoded == 36_000_000)
    // A lossy WebP is decoded scaled (1600 of 4000 needs 0.4: 0.8 with the margin) and row by row.
    let webp = MemoryCostModel.interleavedDecode(
      format: .webp, stored: size, orientation: .up, hasAlpha: false, compressedBytes: 1, variants: variants,
      wholeImageCodec: false)
    #expect(webp.decoded == 3200 * 2400 * 3 && webp.codec == 0)
    #expect(webp.total < heic.total)
  }

  /// An animated WebP composed on its canvas: decoded at full size (libwebp's animation decoder cannot
  /// scale), four bytes a pixel even without alpha (the canvas around the frame is transparent), plus
  /// the decoder's previous canvas and the first frame's own buffer.
  @Test func aComposedAnimationCountsTheCanvasesAtFullSize() {
    let canvas = PixelSize(width: 4000, height: 3000)
    let frame = PixelSize(width: 1000, height: 500)
    let composed = MemoryCostModel.interleavedDecode(
      format: .webp, stored: canvas, orientation: .up, hasAlpha: false, compressedBytes: 1,
      variants: variants,
      composedFrame: frame)
    #expect(composed.decoded == 48_000_000 && composed.interleaved == 48_000_000)
    #expect(composed.codec == 48_000_000 + 2_000_000)
    let still = MemoryCostModel.interleavedDecode(
      format: .webp, stored: canvas, orientation: .up, hasAlpha: false, compressedBytes: 1, variants: variants
    )
    #expect(still.decoded == 3200 * 2400 * 3 && composed.total > still.total)
  }

  @Test func theEconomicalMarginDecodesSmaller() {
    // 6400 px wide to 1600: 1/2 leaves the usual 2x margin, 1/4 is exactly the pixels needed.
    #expect(RenderPlanner.decodeDenominator(requiredScale: 0.25) == 2)
    #expect(RenderPlanner.decodeDenominator(requiredScale: 0.25, margin: RenderPlanner.economicalMargin) == 4)
    let frame = JPEGFrame(
      size: PixelSize(width: 6400, height: 4800), sampling: [.init(2, 2), .init(1, 1), .init(1, 1)],
      progressive: false)
    let usual = MemoryCostModel.jpeg(frame: frame, compressedBytes: 1, orientation: .up, variants: variants)
    let cheaper = MemoryCostModel.jpeg(
      frame: frame, compressedBytes: 1, orientation: .up, variants: variants,
      margin: RenderPlanner.economicalMargin)
    #expect(usual.decoded == 3200 * 2400 * 3 / 2 && cheaper.decoded == 1600 * 1200 * 3 / 2)
  }
}

@Suite struct VariantUnionTests {
  @Test func rendersEachDistinctVariantOnceAndMapsItBack() {
    let a = Profile.default.variants
    var b = Profile.default.variants
    b[0].name = "big"  // the same output under another name
    b[1].quality = 60  // a different output
    let extra = VariantSpec(name: "thumb", width: 100, height: 100, fit: .cover, format: .webp, quality: 70)
    let union = VariantUnion([a, b + [extra]])
    #expect(union.specs.count == 6)  // a's four, b's medium at q60, the webp
    #expect(Set(union.specs.map(\.name)).count == 6)
    #expect(union.members[0].map(\.name) == ["large", "medium", "small", "square"])
    #expect(union.members[1].map(\.name) == ["big", "medium", "small", "square", "thumb"])
    #expect(union.members[1][0].index == union.members[0][0].index)
    #expect(union.members[1][1].index != union.members[0][1].index)
    #expect(union.specs[union.members[1][1].index].quality == 60)
    #expect(union.specs[union.members[1][4].index].format == .webp)
  }
}

@Suite struct JPEGColourSpaceTests {
  /// A baseline SOF0 for 8x8 with three components `ids`, optionally after an Adobe APP14 segment.
  func jpeg(ids: [UInt8], adobeTransform: UInt8?) -> [UInt8] {
    var bytes: [UInt8] = [0xFF, 0xD8]
    if let adobeTransform {
      bytes += [0xFF, 0xEE, 0, 14] + Array("Adobe".utf8) + [0, 100, 0, 0, 0, 0, adobeTransform]
    }
    bytes += [0xFF, 0xC0, 0, 17, 8, 0, 8, 0, 8, 3]
    for id in ids { bytes += [id, 0x11, 0] }
    return bytes + [0xFF, 0xD9]
  }

  @Test func tellsRGBFromYCbCrAsLibjpegDoes() throws {
    #expect(try #require(ImageProbe.jpegFrame(jpeg(ids: [1, 2, 3], adobeTransform: nil))).isRGB == false)
    #expect(try #require(ImageProbe.jpegFrame(jpeg(ids: [0x52, 0x47, 0x42], adobeTransform: nil))).isRGB)
    #expect(try #require(ImageProbe.jpegFrame(jpeg(ids: [1, 2, 3], adobeTransform: 0))).isRGB)
    #expect(
      try #require(ImageProbe.jpegFrame(jpeg(ids: [0x52, 0x47, 0x42], adobeTransform: 1))).isRGB == false)
  }

  @Test func rgbJPEGsPayForTheirInterleavedDecode() throws {
    var frame = try #require(ImageProbe.jpegFrame(jpeg(ids: [1, 2, 3], adobeTransform: 0)))
    frame.size = PixelSize(width: 6000, height: 4000)
    let estimate = MemoryCostModel.jpeg(
      frame: frame, compressedBytes: 1, orientation: .up, variants: Profile.default.variants)
    // Decoded at full size (1600 of 6000 leaves no 2x margin at 1/2), interleaved and then as planes.
    #expect(estimate.interleaved == 6000 * 4000 * 3 && estimate.decoded == estimate.interleaved)
  }
}
