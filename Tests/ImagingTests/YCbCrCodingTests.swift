import Testing

@testable import Imaging

@Suite struct YCbCrCodingTests {
  /// JPEG's conversion keeps the coefficients it always had (1.402, 0.344136, 0.714136, 1.772 in 16.16).
  @Test func jfifIsTheClassicFixedPointConversion() {
    let c = YCbCrCoding.jfif.fixedPoint
    #expect(c.yOffset == 0 && c.yScale == 65536)
    #expect(c.crToR == 91881 && c.cbToG == 22554 && c.crToG == 46802 && c.cbToB == 116130, "\(c)")
  }

  /// Video range: 16 is black and 235 white, whatever the matrix; full range runs 0 to 255.
  @Test func limitedRangeStretchesToFullRange() throws {
    let bt709 = try #require(YCbCrCoding(h273: 1, fullRange: false)).fixedPoint
    #expect(bt709.rgb(y: 16, cb: 128, cr: 128) == (0, 0, 0))
    #expect(bt709.rgb(y: 235, cb: 128, cr: 128) == (255, 255, 255))
    let red = bt709.rgb(y: 63, cb: 102, cr: 240)  // BT.709 video-range red
    #expect(red.0 > 250 && red.1 < 5 && red.2 < 5, "\(red)")
    #expect(YCbCrCoding(h273: 0, fullRange: true) == nil)  // identity (GBR) is no luma/colour-difference pair
  }
}
