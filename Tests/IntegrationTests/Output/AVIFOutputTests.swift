import Foundation
import Testing
import ThumbCore

@testable import Imaging

/// AVIF variants, decoded by another decoder than the one that wrote them: Pillow's AVIF plugin (libavif
/// with its own AV1 decoder), from the test virtualenv scripts/install-deps.sh makes. Each AVIF is compared
/// with a lossless PNG variant of the same render, so wrong colour tagging or a wrong size shows.
@Suite(
  .enabled(
    if: pillowWithAVIF != nil,
    "Pillow with AVIF is missing from the test virtualenv: run scripts/install-deps.sh"))
struct AVIFOutputTests {
  /// What Pillow makes of `avif`, against the PNG `png`: size, mode, mean absolute difference per channel
  /// (alpha included), and the metadata it found.
  struct Decoded: Decodable {
    let width: Int
    let height: Int
    let mode: String
    let meanDifference: Double
    let alphaDifference: Double?
    let metadata: [String]
  }

  func decode(_ avif: [UInt8], against png: [UInt8]) throws -> Decoded {
    let folder = try makeTemporaryDirectory()
    let (a, p) = (folder.appendingPathComponent("v.avif"), folder.appendingPathComponent("v.png"))
    try Data(avif).write(to: a)
    try Data(png).write(to: p)
    let script = """
      import json, sys
      from PIL import Image, ImageChops, ImageStat
      avif, png = Image.open(sys.argv[1]), Image.open(sys.argv[2])
      avif.load()
      metadata = sorted(k for k in avif.info if k in ("exif", "xmp", "icc_profile"))
      mode = avif.mode
      def diff(x, y):
          return sum(ImageStat.Stat(ImageChops.difference(x, y)).mean) / len(x.getbands())
      alpha = None
      if "A" in mode:
          alpha = diff(avif.getchannel("A"), png.convert("RGBA").getchannel("A"))
      mean = diff(avif.convert("RGB"), png.convert("RGB"))
      print(json.dumps({"width": avif.width, "height": avif.height, "mode": mode, "meanDifference": mean,
                        "alphaDifference": alpha, "metadata": metadata}))
      """
    let run = try runProgram(
      try #require(pillowWithAVIF), ["-c", script, a.path, p.path], withStandardError: true)
    #expect(run.code == 0, "\(run.output)")
    return try JSONDecoder().decode(Decoded.self, from: Data(run.output.utf8))
  }

  func variants(_ box: Int, quality: Int = 60, speed: Int = 8) -> [VariantSpec] {
    [
      VariantSpec(
        name: "a", width: box, height: box, fit: .inside, format: .avif, quality: quality, speed: speed),
      VariantSpec(name: "p", width: box, height: box, fit: .inside, format: .png, quality: 82),
    ]
  }

  /// Smooth, saturated colours: compression costs them little, so a wrong matrix or range shows.
  func smoothColours(width: Int, height: Int) throws -> [UInt8] {
    var image = PixelBuffer(width: width, height: height, channels: 3)
    for y in 0..<height {
      for x in 0..<width {
        let i = (y * width + x) * 3
        image.pixels[i] = UInt8(x * 255 / width)
        image.pixels[i + 1] = UInt8(y * 255 / height)
        image.pixels[i + 2] = UInt8(255 - (x * 255 / width + y * 255 / height) / 2)
      }
    }
    return try JPEG.encode(image, quality: 95)
  }

  @Test func aColourPhotoDecodesAtItsSizeInItsColours() throws {
    let (_, out) = try Thumbnailer().render(
      try smoothColours(width: 1200, height: 900), variants: variants(600))
    #expect(out[0].format == .avif && out[0].size == PixelSize(width: 600, height: 450))
    #expect(Array(out[0].data[4..<12]) == Array("ftypavif".utf8))
    let decoded = try decode(out[0].data, against: out[1].data)
    #expect(decoded.width == 600 && decoded.height == 450 && decoded.mode == "RGB")
    #expect(decoded.meanDifference < 1.5, "mean difference \(decoded.meanDifference) levels")
    #expect(decoded.metadata.isEmpty, "\(decoded.metadata)")
  }

  @Test func transparencyIsKept() throws {
    var image = PixelBuffer(width: 500, height: 400, channels: 4)
    for y in 0..<400 {
      for x in 0..<500 {
        let i = (y * 500 + x) * 4
        image.pixels[i] = UInt8(x * 255 / 500)
        image.pixels[i + 1] = 120
        image.pixels[i + 2] = UInt8(y * 255 / 400)
        image.pixels[i + 3] = UInt8(255 - y * 255 / 400)
      }
    }
    let (_, out) = try Thumbnailer().render(
      try PNGEncoder.encode(image), variants: variants(300, quality: 80))
    let decoded = try decode(out[0].data, against: out[1].data)
    #expect(decoded.width == 300 && decoded.height == 240 && decoded.mode == "RGBA")
    #expect(try #require(decoded.alphaDifference) < 2, "alpha differs by \(decoded.alphaDifference ?? -1)")
  }

  @Test func aGreyPhotoDecodesGrey() throws {
    var image = PixelBuffer(width: 640, height: 480, channels: 1)
    for i in 0..<image.pixels.count { image.pixels[i] = UInt8((i % 640) * 255 / 640) }
    let (_, out) = try Thumbnailer().render(try JPEG.encode(image, quality: 90), variants: variants(320))
    let decoded = try decode(out[0].data, against: out[1].data)
    #expect(decoded.width == 320 && decoded.height == 240)
    #expect(decoded.meanDifference < 2, "mean difference \(decoded.meanDifference) levels")
  }

  /// Slower settings make smaller files at the same quality setting; the speed reaches the encoder.
  @Test func speedReachesTheEncoder() throws {
    let photo = try makeTestJPEG(width: 1200, height: 900)
    let (_, fast) = try Thumbnailer().render(photo, variants: variants(600, speed: 9))
    let (_, slow) = try Thumbnailer().render(photo, variants: variants(600, speed: 4))
    #expect(fast[0].data != slow[0].data)
  }
}

/// The test virtualenv's python, when its Pillow reads AVIF.
let pillowWithAVIF: String? = {
  let python = testVirtualenv + "/bin/python"
  guard
    let run = try? runProgram(
      python, ["-c", "from PIL import features; assert features.check('avif')"], withStandardError: true),
    run.code == 0
  else { return nil }
  return python
}()
