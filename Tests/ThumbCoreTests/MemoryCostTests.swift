import Foundation
import Testing
import ThumbCore

@testable import ThumbCore

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

struct MemoryCostModelTests {
  let variants = Profile.default.variants

  @Test func progressiveFilesPayForEveryCoefficient() {
    // 100 megapixels, three components: 12,500 x 8,000 px = 1,563 x 1,000 blocks x 64 x 2 bytes x 3.
    let frame = JPEGFrame(
      size: PixelSize(width: 12_500, height: 8_000), sampling: Array(repeating: .init(1, 1), count: 3),
      progressive: true)
    let progressive = MemoryCostModel.jpeg(
      frame: frame, compressedBytes: 30_000_000, orientation: .up, variants: variants)
    #expect(progressive.coefficients == 600_192_000)
    var baselineFrame = frame
    baselineFrame.progressive = false
    let baseline = MemoryCostModel.jpeg(
      frame: baselineFrame, compressedBytes: 30_000_000, orientation: .up, variants: variants)
    #expect(baseline.coefficients == 0)
    // 1600 px from 12,500 is a 0.128 scale: 1/2 leaves the resampler its 2x margin, 1/4 would not:
    // 6,250 x 4,000 x three full-size planes (4:4:4).
    #expect(baseline.decoded == 75_000_000)
    #expect(baseline.total < 160_000_000, "\(baseline)")
    // Decoding holds file, coefficients and pixels together; rendering comes after the coefficients
    // are freed.
    #expect(
      progressive.total
        == Int(Double(30_000_000 + 600_192_000 + 75_000_000) * 1.1) + MemoryEstimate.fixedOverhead)
    // 4:2:0 keeps a quarter of the chroma blocks, in whole 16x16 MCUs: 782 x 500 MCUs x (4 + 1 + 1).
    var subsampled = frame
    subsampled.sampling = [.init(2, 2), .init(1, 1), .init(1, 1)]
    #expect(subsampled.coefficientBlocks == 782 * 500 * 6)
  }

  @Test func planesFollowTheSubsamplingAndOrientationIsFree() {
    // 4:2:0, 1201 x 901: planes padded to even sizes, Y 1202 x 902, Cb and Cr 601 x 451 each.
    let frame = JPEGFrame(
      size: PixelSize(width: 1201, height: 901), sampling: [.init(2, 2), .init(1, 1), .init(1, 1)],
      progressive: false)
    let upright = MemoryCostModel.jpeg(frame: frame, compressedBytes: 1, orientation: .up, variants: variants)
    let rotated = MemoryCostModel.jpeg(
      frame: frame, compressedBytes: 1, orientation: .rotated90Clockwise, variants: variants)
    #expect(upright.decoded == 1202 * 902 + 2 * 601 * 451 && upright.interleaved == 0)
    #expect(rotated.decoded == upright.decoded)  // turned on the outputs, not the decode
    #expect(upright.rendering > 0)
    // CMYK is decoded interleaved, then split: both buffers at once.
    let cmyk = JPEGFrame(
      size: frame.size, sampling: Array(repeating: .init(1, 1), count: 4), progressive: false)
    let c = MemoryCostModel.jpeg(frame: cmyk, compressedBytes: 1, orientation: .up, variants: variants)
    #expect(c.decoded == 1201 * 901 * 4 && c.interleaved == c.decoded)
  }

  @Test func readsTheFrameHeader() {
    // SOF2 (progressive), height 8000 (0x1F40), width 12500 (0x30D4), 3 components: Y 2x2, Cb and Cr 1x1.
    let bytes: [UInt8] =
      [0xFF, 0xD8, 0xFF, 0xC2, 0x00, 0x11, 0x08, 0x1F, 0x40, 0x30, 0xD4, 0x03]
      + [1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1] + [UInt8](repeating: 0, count: 4)
    #expect(
      ImageProbe.jpegFrame(bytes)
        == JPEGFrame(
          size: PixelSize(width: 12_500, height: 8_000), sampling: [.init(2, 2), .init(1, 1), .init(1, 1)],
          progressive: true))
  }
}

@Suite struct AVIFEncoderCostTests {
  /// The AV1 encoder's buffers, measured at 6.4 MiB plus 27 bytes a pixel, are counted once, for the
  /// largest AVIF variant (variants are encoded one at a time).
  @Test func theLargestAVIFVariantAddsItsEncoder() {
    let frame = JPEGFrame(
      size: PixelSize(width: 1920, height: 1200), sampling: [.init(2, 2), .init(1, 1), .init(1, 1)],
      progressive: false)
    func peak(_ formats: [VariantFormat]) -> Int {
      let variants = zip([1600, 800], formats).map { box, format in
        VariantSpec(name: "v\(box)", width: box, height: box, fit: .inside, format: format, quality: 60)
      }
      return MemoryCostModel.jpeg(frame: frame, compressedBytes: 1, orientation: .up, variants: variants)
        .rendering
    }
    #expect(peak([.avif, .png]) - peak([.png, .png]) == 8 << 20 + 1600 * 1000 * 30)
    #expect(peak([.png, .avif]) - peak([.png, .png]) == 8 << 20 + 800 * 500 * 30)
    #expect(peak([.avif, .avif]) == peak([.avif, .png]))
  }
}
