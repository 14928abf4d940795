import Foundation
import Testing
import ThumbCore

@testable import ThumbCore

struct ImageProbeTests {
  @Test func readsSizesFromHeaders() {
    // JPEG: SOI, an APP0 segment to skip, then SOF0 with height 0x01E0 (480) and width 0x0280 (640),
    // and three components (id, sampling, table each).
    let components: [UInt8] = [0x03, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]
    let jpeg: [UInt8] =
      [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x04, 0x00, 0x00, 0xFF, 0xC0, 0x00, 0x11, 0x08, 0x01, 0xE0, 0x02, 0x80]
      + components + [UInt8](repeating: 0, count: 4)
    #expect(ImageProbe.pixelSize(jpeg, format: .jpeg) == PixelSize(width: 640, height: 480))
    // A DHT segment (0xC4) is not a frame header and is skipped.
    let withDHT: [UInt8] =
      [0xFF, 0xD8, 0xFF, 0xC4, 0x00, 0x04, 0x00, 0x00, 0xFF, 0xC2, 0x00, 0x11, 0x08, 0x00, 0x10, 0x00, 0x20]
      + components + [UInt8](repeating: 0, count: 4)
    #expect(ImageProbe.pixelSize(withDHT, format: .jpeg) == PixelSize(width: 32, height: 16))

    var png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13] + Array("IHDR".utf8)
    png += [0, 0, 0x0F, 0xA0, 0, 0, 0x0B, 0xB8, 8, 6, 0, 0, 0]
    #expect(ImageProbe.pixelSize(png, format: .png) == PixelSize(width: 4000, height: 3000))

    let gif: [UInt8] = Array("GIF89a".utf8) + [0x2C, 0x01, 0xC8, 0x00, 0, 0, 0]
    #expect(ImageProbe.pixelSize(gif, format: .gif) == PixelSize(width: 300, height: 200))

    func webp(_ chunk: String, _ payload: [UInt8]) -> [UInt8] {
      Array("RIFF".utf8) + [0, 0, 0, 0] + Array("WEBP".utf8) + Array(chunk.utf8) + [0, 0, 0, 0] + payload
        + [UInt8](repeating: 0, count: 16)
    }
    // VP8X: canvas width-1 = 1919, height-1 = 1079 (24-bit little-endian).
    let vp8x = webp("VP8X", [0, 0, 0, 0, 0x7F, 0x07, 0x00, 0x37, 0x04, 0x00])
    #expect(ImageProbe.pixelSize(vp8x, format: .webp) == PixelSize(width: 1920, height: 1080))
    // VP8 (lossy): frame tag, start code 9d 01 2a, then 14-bit width 400 and height 300.
    let vp8 = webp("VP8 ", [0, 0, 0, 0x9D, 0x01, 0x2A, 0x90, 0x01, 0x2C, 0x01])
    #expect(ImageProbe.pixelSize(vp8, format: .webp) == PixelSize(width: 400, height: 300))
    // VP8L: signature 0x2f, then width-1 = 99 and height-1 = 49 packed in 14-bit fields.
    let w = 99
    let h = 49
    let bits = w | h << 14
    let vp8l = webp(
      "VP8L",
      [0x2F, UInt8(bits & 0xFF), UInt8(bits >> 8 & 0xFF), UInt8(bits >> 16 & 0xFF), UInt8(bits >> 24)])
    #expect(ImageProbe.pixelSize(vp8l, format: .webp) == PixelSize(width: 100, height: 50))
  }

  @Test func truncatedOrZeroSizedHeadersGiveNothing() {
    #expect(ImageProbe.pixelSize([0xFF, 0xD8, 0xFF, 0xE0, 0x00], format: .jpeg) == nil)
    #expect(ImageProbe.pixelSize([0x89, 0x50, 0x4E, 0x47], format: .png) == nil)
    let zeroGIF: [UInt8] = Array("GIF89a".utf8) + [0, 0, 0xC8, 0x00]
    #expect(ImageProbe.pixelSize(zeroGIF, format: .gif) == nil)
    #expect(ImageProbe.pixelSize(Array(repeating: 0, count: 64), format: .heif) == nil)
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
