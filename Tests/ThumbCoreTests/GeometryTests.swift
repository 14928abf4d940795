import Testing

@testable import ThumbCore

@Suite struct GeometryTests {
  let landscape = PixelSize(width: 4000, height: 3000)

  @Test func insideKeepsAspectAndFitsTheBox() {
    let large = VariantLayout.make(source: landscape, box: PixelSize(width: 1600, height: 1600), fit: .inside)
    #expect(large.output == PixelSize(width: 1600, height: 1200))
    #expect(large.region == Region(landscape))
    let portrait = VariantLayout.make(
      source: PixelSize(width: 3024, height: 4032), box: PixelSize(width: 320, height: 320), fit: .inside)
    #expect(portrait.output == PixelSize(width: 240, height: 320))
  }

  @Test func neverUpscales() {
    let small = PixelSize(width: 1000, height: 500)
    let inside = VariantLayout.make(source: small, box: PixelSize(width: 1600, height: 1600), fit: .inside)
    #expect(inside.output == small)
    let cover = VariantLayout.make(
      source: PixelSize(width: 200, height: 1000), box: PixelSize(width: 256, height: 256), fit: .cover)
    #expect(cover.output == PixelSize(width: 200, height: 200))
    #expect(cover.region == Region(x: 0, y: 400, width: 200, height: 200))
    let tiny = VariantLayout.make(
      source: PixelSize(width: 100, height: 68), box: PixelSize(width: 256, height: 256), fit: .cover)
    #expect(tiny.output == PixelSize(width: 68, height: 68))
  }

  @Test func coverCropsTheCentre() {
    let square = VariantLayout.make(source: landscape, box: PixelSize(width: 256, height: 256), fit: .cover)
    #expect(square.output == PixelSize(width: 256, height: 256))
    #expect(square.region == Region(x: 500, y: 0, width: 3000, height: 3000))
    let tall = VariantLayout.make(
      source: PixelSize(width: 3000, height: 4000), box: PixelSize(width: 300, height: 100), fit: .cover)
    #expect(tall.output == PixelSize(width: 300, height: 100))
    #expect(tall.region == Region(x: 0, y: 1500, width: 3000, height: 1000))
  }

  @Test func extremeAspectStillGetsOnePixel() {
    let strip = VariantLayout.make(
      source: PixelSize(width: 20000, height: 3), box: PixelSize(width: 320, height: 320), fit: .inside)
    #expect(strip.output == PixelSize(width: 320, height: 1))
  }
}
