import Testing
import ThumbCore

@testable import Imaging

/// Smart crops through the whole thumbnailer: a generated JPEG with a red subject in its left third.
@Suite struct SmartCropRenderTests {
  /// 1200x400 grey with a textured red square at x 150-350, y 100-300: a 200x200 cover variant shows a
  /// 400x400 window, which from the centre (x 400-800) misses the square.
  static func picture() -> PixelBuffer {
    var image = TestImages.solid(width: 1200, height: 400, (120, 120, 120))
    for y in 100..<300 {
      for x in 150..<350 {
        let i = (y * 1200 + x) * 3
        let shade: UInt8 = (x / 8 + y / 8) % 2 == 0 ? 230 : 180
        (image.pixels[i], image.pixels[i + 1], image.pixels[i + 2]) = (shade, 25, 25)
      }
    }
    return image
  }

  /// The share of `image`'s pixels that are the subject's red.
  static func redShare(_ image: PixelBuffer) -> Double {
    var red = 0
    for i in 0..<(image.width * image.height) {
      let (r, g, b) = (image.pixels[i * 3], image.pixels[i * 3 + 1], image.pixels[i * 3 + 2])
      if r > 140 && g < 80 && b < 80 { red += 1 }
    }
    return Double(red) / Double(image.width * image.height)
  }

  static func cover(_ name: String, crop: CropStrategy) -> VariantSpec {
    VariantSpec(name: name, width: 200, height: 200, fit: .cover, format: .jpeg, quality: 90, crop: crop)
  }

  @Test func attentionKeepsTheOffCentreSubjectThatTheCentreCropLoses() throws {
    let jpeg = try JPEG.encode(Self.picture(), quality: 92)
    let variants = [
      Self.cover("a", crop: .attention), Self.cover("c", crop: .centre), Self.cover("e", crop: .entropy),
    ]
    let (_, rendered) = try Thumbnailer().render(jpeg, variants: variants)
    #expect(rendered.map(\.size) == Array(repeating: PixelSize(width: 200, height: 200), count: 3))
    let shares = try rendered.map { Self.redShare(try JPEG.decode($0.data)) }
    // The square is a quarter of a 400x400 window, so about a quarter of the output once it is wholly in.
    #expect(shares[0] > 0.2, "attention: \(shares[0]) of the pixels are the subject's red")
    #expect(shares[1] == 0, "centre: \(shares[1])")
    #expect(shares[2] > 0.2, "entropy: \(shares[2])")
  }

  /// The picture stored turned or mirrored, with the EXIF orientation that turns it upright: the crop
  /// is chosen on the upright picture, so the subject is kept whichever way the pixels are stored.
  @Test(arguments: Orientation.allCases)
  func theCropFollowsTheSubjectInEveryOrientation(orientation: Orientation) throws {
    let jpeg = try TestImages.orientedJPEG(Self.picture(), orientation, quality: 92)
    let (info, rendered) = try Thumbnailer().render(jpeg, variants: [Self.cover("a", crop: .attention)])
    #expect(info.size == PixelSize(width: 1200, height: 400))
    let share = Self.redShare(try JPEG.decode(rendered[0].data))
    #expect(share > 0.2, "orientation \(orientation): \(share) of the pixels are the subject's red")
  }

  /// Nothing salient: the smart crop falls back to the centre crop's very region, so its bytes are the
  /// centre crop's.
  @Test func onAFlatPictureAttentionIsTheCentreCropByteForByte() throws {
    let jpeg = try JPEG.encode(TestImages.solid(width: 900, height: 300, (60, 140, 90)), quality: 90)
    let (_, rendered) = try Thumbnailer().render(
      jpeg, variants: [Self.cover("a", crop: .attention), Self.cover("c", crop: .centre)])
    #expect(rendered[0].data == rendered[1].data)
  }

  /// A smart crop alongside the default profile changes none of the default variants' bytes (the
  /// analysis reads an existing result and feeds nothing else).
  @Test func theDefaultVariantsAreUnchangedBesideASmartCrop() throws {
    let jpeg = try JPEG.encode(syntheticImage(width: 1500, height: 1000), quality: 90)
    let plain = try Thumbnailer().render(jpeg, variants: Profile.default.variants)
    let mixed = try Thumbnailer().render(
      jpeg, variants: Profile.default.variants + [Self.cover("hero", crop: .attention)])
    #expect(mixed.1.prefix(4).map(\.data) == plain.1.map(\.data))
    #expect(mixed.0.thumbHash == plain.0.thumbHash)
  }
}
