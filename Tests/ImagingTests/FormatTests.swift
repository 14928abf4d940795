import Foundation
import TestSupport
import Testing
import ThumbCore

@testable import Imaging

/// Decodes any output thumbd writes (JPEG, PNG, WebP) to interleaved pixels, upright, alpha straight.
func decodeAny(_ bytes: [UInt8]) throws -> PixelBuffer {
  try SourceDecoders.make(bytes, maxPixels: 100_000_000).decode(requiredScale: 1, margin: 1).image
    .interleaved()
}

func variant(
  _ name: String, _ w: Int, _ h: Int, fit: Fit = .inside, format: VariantFormat = .jpeg, quality: Int = 90,
  subsampling: ChromaSubsampling = .s420, progressive: Bool = false
) -> VariantSpec {
  VariantSpec(
    name: name, width: w, height: h, fit: fit, format: format, quality: quality, subsampling: subsampling,
    progressive: progressive)
}

func near(_ a: [Double], _ b: [Double], _ tolerance: Double) -> Bool {
  a.count == b.count && zip(a, b).allSatisfy { abs($0 - $1) <= tolerance }
}

@Suite struct InputFormatTests {
  let thumbnailer = Thumbnailer()

  /// RGBA, 8-bit: an opaque red disc on a transparent background whose colour is green. Premultiplied
  /// resampling must not let that invisible green bleed into the disc's edge.
  @Test func pngWithAlphaStaysTransparentWithoutFringes() throws {
    let (w, h) = (200, 200)
    var scanlines: [UInt8] = []
    for y in 0..<h {
      for x in 0..<w {
        let inside = (x - 100) * (x - 100) + (y - 100) * (y - 100) < 60 * 60
        scanlines += inside ? [255, 0, 0, 255] : [0, 255, 0, 0]
      }
    }
    let png = TestImages.png(width: w, height: h, colorType: 6, bitDepth: 8, scanlines: scanlines)
    let (info, variants) = try thumbnailer.render(png, variants: [variant("a", 50, 50, format: .auto)])
    #expect(info.format == .png && info.hasAlpha)
    #expect(variants[0].format == .png && ImageFormat.sniff(variants[0].data) == .png)
    let out = try decodeAny(variants[0].data)
    #expect(out.channels == 4 && out.size == PixelSize(width: 50, height: 50))
    #expect(out.pixels[3] == 0)  // a transparent corner
    #expect(Array(out.pixels[(25 * 50 + 25) * 4..<(25 * 50 + 26) * 4]) == [255, 0, 0, 255])
    for i in stride(from: 0, to: out.pixels.count, by: 4) where out.pixels[i + 3] > 16 {
      #expect(out.pixels[i + 1] < 24, "green fringe at pixel \(i / 4): \(out.pixels[i..<i + 4])")
    }
    // The same picture as a JPEG is flattened onto white.
    let (_, jpegs) = try thumbnailer.render(png, variants: [variant("j", 50, 50)])
    let flat = try JPEG.decode(jpegs[0].data)
    #expect(flat.pixels[0] > 240 && flat.pixels[1] > 240 && flat.pixels[2] > 240)
  }

  @Test func png16BitPaletteAndGreyDecode() throws {
    // 16-bit RGB: 0x8000 is 128 in 8 bits.
    let pixel16: [UInt8] = [0, 0x80, 0, 0x20, 0xFF, 0xFF]  // host (little) endian, as libspng takes it
    let row16 = Array([[UInt8]](repeating: pixel16, count: 8).joined())
    let rgb16 = Array([[UInt8]](repeating: row16, count: 8).joined())
    /// A PNG of these samples, through thumbd at its own size to a PNG variant, decoded again.
    func roundTrip(_ side: Int, colorType: UInt8, bitDepth: UInt8, _ samples: [UInt8]) throws -> PixelBuffer {
      let png = TestImages.png(
        width: side, height: side, colorType: colorType, bitDepth: bitDepth, scanlines: samples)
      return try decodeAny(
        try thumbnailer.render(png, variants: [variant("p", side, side, format: .png)]).1[0].data)
    }
    let a = try roundTrip(8, colorType: 2, bitDepth: 16, rgb16)
    #expect(Array(a.pixels[0..<3]) == [128, 32, 255])
    // Palette with a transparent entry.
    let indices = (0..<4).flatMap { _ in [0, 1, 0, 1] as [UInt8] }
    let palette = TestImages.png(
      width: 4, height: 4, colorType: 3, bitDepth: 8, scanlines: indices,
      palette: [(10, 20, 30), (200, 100, 0)], transparency: [255, 0])
    let (info, variants) = try thumbnailer.render(palette, variants: [variant("p", 4, 4, format: .auto)])
    #expect(info.hasAlpha && variants[0].format == .png)
    let p = try decodeAny(variants[0].data)
    #expect(Array(p.pixels[0..<4]) == [10, 20, 30, 255])
    #expect(p.pixels[7] == 0)
    // Grey, 8-bit.
    let grey = [UInt8](repeating: 90, count: 16)
    let g = try roundTrip(4, colorType: 0, bitDepth: 8, grey)
    #expect(Array(g.pixels[0..<3]) == [90, 90, 90])
  }

  @Test func pngExifOrientationIsApplied() throws {
    let scanlines = [UInt8](repeating: 200, count: 20 * 40 * 3)
    let png = TestImages.png(
      width: 40, height: 20, colorType: 2, bitDepth: 8, scanlines: scanlines,
      exif: TestImages.tiffOrientation(6))
    let (info, variants) = try thumbnailer.render(png, variants: [variant("a", 100, 100)])
    #expect(info.orientation == .rotated90Clockwise)
    #expect(variants[0].size == PixelSize(width: 20, height: 40))
  }

  @Test func webpLosslessAlphaAndScaledLossyDecode() throws {
    var rgba = PixelBuffer(width: 64, height: 32, channels: 4)
    for i in 0..<(64 * 32) where i % 64 < 32 {
      rgba.pixels[i * 4] = 30
      rgba.pixels[i * 4 + 1] = 60
      rgba.pixels[i * 4 + 2] = 90
      rgba.pixels[i * 4 + 3] = 255
    }
    let (info, variants) = try thumbnailer.render(
      TestImages.webp(rgba, lossless: true), variants: [variant("a", 64, 32, format: .auto)])
    #expect(info.format == .webp && info.hasAlpha && variants[0].format == .png)
    let out = try decodeAny(variants[0].data)
    #expect(Array(out.pixels[0..<4]) == [30, 60, 90, 255])
    #expect(out.pixels[63 * 4 + 3] == 0)

    let lossy = TestImages.webp(syntheticImage(width: 3000, height: 2000), lossless: false)
    let (big, large) = try thumbnailer.render(lossy, variants: [variant("s", 300, 300)])
    #expect(big.reduction == "scaled to 600x400")
    #expect(large[0].size == PixelSize(width: 300, height: 200))
    #expect(meanDifference(try JPEG.decode(large[0].data), syntheticImage(width: 300, height: 200)) < 6)
  }

  /// A Display P3 colour must come out as the sRGB colour that looks the same: (200, 100, 50) in P3 is
  /// about (215, 93, 31) in sRGB (by the P3-to-sRGB matrix and the sRGB curve, worked by hand).
  @Test func iccProfileIsConvertedToSRGB() throws {
    let plain = try JPEG.encode(TestImages.solid(width: 64, height: 64, (200, 100, 50)), quality: 95)
    let tagged = TestImages.inserting([TestImages.iccSegment(TestImages.displayP3Profile())], into: plain)
    let untouched = try JPEG.decode(try thumbnailer.render(plain, variants: [variant("a", 32, 32)]).1[0].data)
    let converted = try JPEG.decode(
      try thumbnailer.render(tagged, variants: [variant("a", 32, 32)]).1[0].data)
    #expect(near(meanColor(untouched), [200, 100, 50], 3))
    #expect(near(meanColor(converted), [215, 93, 31], 4), "\(meanColor(converted))")
    // A grey is the same in both spaces: the conversion must leave it alone.
    let grey = TestImages.inserting(
      [TestImages.iccSegment(TestImages.displayP3Profile())],
      into: try JPEG.encode(TestImages.solid(width: 64, height: 64, (128, 128, 128)), quality: 95))
    #expect(
      near(
        meanColor(try JPEG.decode(try thumbnailer.render(grey, variants: [variant("a", 32, 32)]).1[0].data)),
        [128, 128, 128], 2))
  }

  @Test func greyJPEGStaysGrey() throws {
    var grey = PixelBuffer(width: 100, height: 60, channels: 1)
    for i in 0..<grey.pixels.count { grey.pixels[i] = UInt8(i % 100 * 2) }
    let (_, variants) = try thumbnailer.render(
      try JPEG.encode(grey, quality: 90), variants: [variant("a", 50, 50)])
    #expect(ImageProbe.jpegFrame(variants[0].data)?.components == 1)
  }
}

@Suite struct OutputOptionTests {
  let thumbnailer = Thumbnailer()
  let source = try! JPEG.encode(syntheticImage(width: 1200, height: 800), quality: 90)

  @Test func webpOutput() throws {
    let (_, variants) = try thumbnailer.render(
      source, variants: [variant("w", 300, 300, format: .webp, quality: 80)])
    #expect(variants[0].format == .webp && ImageFormat.sniff(variants[0].data) == .webp)
    let out = try decodeAny(variants[0].data)
    #expect(out.size == PixelSize(width: 300, height: 200))
    #expect(meanDifference(out, syntheticImage(width: 300, height: 200)) < 6)
  }

  @Test func jpegSubsamplingAndProgressive() throws {
    let (_, variants) = try thumbnailer.render(
      source,
      variants: [variant("a", 300, 300, subsampling: .s444, progressive: true), variant("b", 200, 200)])
    let a = try #require(ImageProbe.jpegFrame(variants[0].data))
    let b = try #require(ImageProbe.jpegFrame(variants[1].data))
    #expect(a.progressive && a.sampling.allSatisfy { $0 == .init(1, 1) })
    #expect(!b.progressive && b.sampling[0] == .init(2, 2))
  }

  @Test func fillStretches() throws {
    let (_, variants) = try thumbnailer.render(source, variants: [variant("f", 200, 200, fit: .fill)])
    #expect(variants[0].size == PixelSize(width: 200, height: 200))
    let out = try JPEG.decode(variants[0].data)
    // The red gradient runs the whole width: stretched, not cropped.
    #expect(out.pixels[3] < 12 && out.pixels[(200 - 1) * 3] > 243)
  }

  @Test func everyResultHasAThumbHash() throws {
    let (info, _) = try thumbnailer.render(source, variants: Profile.default.variants)
    let hash = try #require(Data(base64Encoded: info.thumbHash))
    #expect((5...25).contains(hash.count))
    #expect(hash[4] & 0x80 != 0)  // landscape
  }
}

@Suite(.enabled(if: SharedCorpus.isAvailable, Comment(rawValue: SharedCorpus.skipReason)))
struct HEIFCorpusTests {
  let thumbnailer = Thumbnailer()

  func render(_ path: String) throws -> (SourceInfo, PixelBuffer) {
    let (info, variants) = try thumbnailer.render(
      try SharedCorpus.bytes(path), variants: Profile.default.variants)
    #expect(variants.count == 4)
    #expect(variants.allSatisfy { !carriesMetadata($0.data) })
    return (info, try JPEG.decode(variants[2].data))
  }

  /// The mean colour of a band of rows (fractions of the height).
  func band(_ image: PixelBuffer, _ rows: ClosedRange<Double>) -> [Double] {
    let from = Int(rows.lowerBound * Double(image.height))
    let to = Int(rows.upperBound * Double(image.height))
    var sums = [0.0, 0, 0]
    for y in from..<to {
      for x in 0..<image.width {
        for c in 0..<3 { sums[c] += Double(image.pixels[(y * image.width + x) * 3 + c]) }
      }
    }
    return sums.map { $0 / Double((to - from) * image.width) }
  }

  @Test func iPhoneHEICIsUprightWithItsColours() throws {
    let (info, small) = try render("heic/IMG_5195.HEIC")
    #expect(info.format == .heif && info.size == PixelSize(width: 2566, height: 3313))
    #expect(small.size == PixelSize(width: 248, height: 320))  // portrait, as the phone held it
    // Green leaves at the top, a purple (red and blue over green) flower lower down.
    let top = band(small, 0.0...0.15)
    #expect(top[1] > top[0] && top[1] > top[2], "\(top)")
  }

  /// Found by the bad-input sweep: a grid whose `dimg` references name the grid itself sent libheif 1.15
  /// into endless recursion, and the worker died of a stack overflow. It is refused before libheif reads it.
  @Test func aHEIFGridMadeOfItselfIsRefusedNotACrash() throws {
    var bytes = try SharedCorpus.bytes("heic/IMG_5195.HEIC")
    let iref = try #require(bytes.firstRange(of: Array("iref".utf8))).lowerBound
    let dimg = try #require(bytes[iref...].firstRange(of: Array("dimg".utf8))).lowerBound
    // iref version 0: from (16 bits), count (16 bits), then the tiles; the first tile becomes the grid.
    bytes[dimg + 8] = bytes[dimg + 4]
    bytes[dimg + 9] = bytes[dimg + 5]
    #expect(HEIFItemReferences.derivationLoop(in: bytes) != nil)
    let error = #expect(throws: JobError.self) {
      try thumbnailer.render(bytes, variants: Profile.default.variants)
    }
    #expect(error?.code == .corruptImage)
    #expect(error?.message.contains("derived from itself") == true, "\(String(describing: error))")
  }

  @Test func libheifExamplesDecodeInBothCodecs() throws {
    let (heic, heicSmall) = try render("heic/example.heic")
    #expect(heic.format == .heif && heic.size == PixelSize(width: 1280, height: 854))
    let sky = band(heicSmall, 0.0...0.2)
    #expect(sky[2] > sky[0] + 20, "the sky over Tübingen is blue: \(sky)")
    let (avif, avifSmall) = try render("heic/example.avif")
    #expect(avif.format == .avif && avif.size == PixelSize(width: 800, height: 533))
    let lawn = band(avifSmall, 0.7...1.0)
    #expect(lawn[1] > lawn[2] + 15, "the lawn in the foreground is green: \(lawn)")
  }
}

@Suite struct ChromaAlignmentTests {
  /// A flipped orientation must not shift 4:2:0 chroma: an odd-width output of a mirrored original
  /// (EXIF orientation 2) matches the same picture stored upright, also at a sharp colour edge.
  @Test(arguments: [2, 3, 4, 5, 6, 7, 8])
  func flippedOutputsKeepChromaInPlace(orientation: Int) throws {
    let upright = PixelSize(width: 202, height: 122)
    var picture = PixelBuffer(width: upright.width, height: upright.height, channels: 3)
    for y in 0..<upright.height {
      for x in 0..<upright.width {
        // Red left of column 101 and above row 61, blue elsewhere: edges on odd output pixels.
        let red = x < 101 && y < 61
        picture.pixels[(y * upright.width + x) * 3] = red ? 230 : 20
        picture.pixels[(y * upright.width + x) * 3 + 2] = red ? 20 : 230
      }
    }
    let o = try #require(Orientation(rawValue: orientation))
    let turned = try TestImages.orientedJPEG(picture, o, quality: 95)
    let spec = [variant("v", 101, 61, quality: 95)]
    let a = try JPEG.decode(
      try Thumbnailer().render(try JPEG.encode(picture, quality: 95), variants: spec).1[0].data)
    let b = try JPEG.decode(try Thumbnailer().render(turned, variants: spec).1[0].data)
    #expect(a.size == PixelSize(width: 101, height: 61) && b.size == a.size)
    let worst = zip(a.pixels, b.pixels).map { abs(Int($0) - Int($1)) }.max() ?? 0
    #expect(worst <= 24, "orientation \(orientation): channels differ by up to \(worst)")
  }
}
