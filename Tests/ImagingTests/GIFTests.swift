import Foundation
import TestSupport
import Testing
import ThumbCore

@testable import Imaging

/// GIFs: every picture of the generated matrix comes out as the composited frame a browser shows (the
/// first worth showing), at its canvas size; bombs and damaged files end as the error their kind calls
/// for, never a crash.
@Suite(.enabled(if: GIFMatrix.isAvailable, Comment(rawValue: GIFMatrix.skipReason)))
struct GIFMatrixTests {
  @Test(arguments: GIFMatrix.cases)
  func eachGIFGetsItsFrameOrItsError(_ gif: GIFMatrix.Case) throws {
    let bytes = try GIFMatrix.bytes(gif.name)
    let allowed = Set(gif.expect.split(separator: "|").map(String.init))
    let decoded: DecodedSource
    let decoder: any SourceDecoder
    do {
      decoder = try SourceDecoders.make(bytes, maxPixels: 100_000_000)
      decoded = try decoder.decode(requiredScale: 1, margin: 1)
    } catch {
      #expect(allowed.contains(error.code.rawValue), "\(gif.name): \(error)")
      return
    }
    #expect(allowed.contains("picture"), "\(gif.name) should have failed (\(gif.expect))")
    #expect(decoder.header.format == .gif)
    guard let reference = gif.reference else { return }
    let expected = try decodeAny(try GIFMatrix.bytes(reference))
    let pixels = decoded.image.interleaved()
    try #require(
      pixels.width == expected.width && pixels.height == expected.height, "\(gif.name): \(pixels.size)")
    // Straight RGBA (or RGB) both sides; transparent pixels' colour does not matter.
    var worst = 0
    for i in 0..<(pixels.width * pixels.height) {
      let a = pixels.channels == 4 ? Int(pixels.pixels[i * 4 + 3]) : 255
      let b = expected.channels == 4 ? Int(expected.pixels[i * expected.channels + 3]) : 255
      worst = max(worst, abs(a - b))
      guard a > 0 && b > 0 else { continue }
      for c in 0..<3 {
        worst = max(
          worst,
          abs(Int(pixels.pixels[i * pixels.channels + c]) - Int(expected.pixels[i * expected.channels + c])))
      }
    }
    #expect(worst <= 2, "\(gif.name): a sample \(worst) levels off the composited frame \(gif.frame ?? 0)")
    if let frame = gif.frame {
      #expect(
        decoded.reduction == (frame == 0 ? "1/1" : "frame \(frame + 1)"), "\(gif.name): \(decoded.reduction)")
    }
  }

  /// The generator ran: an empty matrix would pass the test above without a case.
  @Test func theMatrixIsMade() {
    #expect(GIFMatrix.cases.count >= 10, "Tests/Support/gif-matrix.py made \(GIFMatrix.cases.count) cases")
  }

  /// The corpus's GIFs (Microsoft Paint's, and Photoshop's with transparency) render at their size.
  @Test(.enabled(if: SharedCorpus.isAvailable, Comment(rawValue: SharedCorpus.skipReason)))
  func corpusGIFsRender() throws {
    for (path, width, height) in [
      ("stills/mspaint-10x10.gif", 10, 10), ("stills/photoshop-8x12-32colors-alpha.gif", 8, 12),
    ] {
      let (info, variants) = try Thumbnailer().render(
        try SharedCorpus.bytes(path), variants: Profile.default.variants)
      #expect(
        info.format == .gif && info.size == PixelSize(width: width, height: height) && variants.count == 4)
    }
  }

  @Test func theStructureIsReadWithoutDecompressing() {
    // A 2-frame GIF's blocks: header, screen (16x8, no global palette), a graphic control with a
    // transparent colour, two frames of one empty data sub-block each, the trailer.
    var bytes = Array("GIF89a".utf8) + [16, 0, 8, 0, 0, 0, 0]
    bytes += [0x21, 0xF9, 4, 1, 0, 0, 0, 0]
    for _ in 0..<2 { bytes += [0x2C, 0, 0, 0, 0, 16, 0, 8, 0, 0x80, 0, 0, 0, 0, 0, 0, 2, 0] }
    bytes += [0x3B]
    #expect(
      GIFStructure.read(bytes)
        == GIFStructure(
          canvas: PixelSize(width: 16, height: 8), frames: 2, transparent: true, largestFrame: 128,
          frameAreas: [128, 128]))
    #expect(GIFStructure.read(Array("PNG".utf8)) == nil)
  }

  /// A frame is decompressed whole, clipped or not: one declared at 65535x65535 on a 16x16 canvas (a few
  /// MB of LZW could fill it) is refused before giflib reads a row.
  @Test func aFrameOverTheLimitIsTooLargeWhateverTheCanvas() throws {
    var bytes = Array("GIF89a".utf8) + [16, 0, 16, 0, 0x80, 0, 0] + [0, 0, 0, 255, 255, 255]
    bytes += [0x2C, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0, 2, 2, 0x4C, 0x01, 0, 0x3B]
    #expect(GIFStructure.read(bytes)?.largestFrame == 65535 * 65535)
    do {
      _ = try SourceDecoders.make(bytes, maxPixels: 100_000_000)
      Issue.record("a 65535x65535 frame was accepted")
    } catch {
      #expect(error.code == .tooLarge, "\(error)")
    }
  }
}
