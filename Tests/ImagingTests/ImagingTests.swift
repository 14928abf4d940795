import TestSupport
import Testing
import ThumbCore

@testable import Imaging

/// A synthetic photo-like image: smooth gradients plus a sharp diagonal edge.
func syntheticImage(width: Int, height: Int) -> PixelBuffer {
  var image = PixelBuffer(width: width, height: height, channels: 3)
  for y in 0..<height {
    for x in 0..<width {
      let i = (y * width + x) * 3
      image.pixels[i] = UInt8(x * 255 / max(1, width - 1))
      image.pixels[i + 1] = UInt8(y * 255 / max(1, height - 1))
      image.pixels[i + 2] = x > y ? 200 : 40
    }
  }
  return image
}

/// Whether a JPEG carries any APPn segment other than JFIF (APP0), or a comment.
func carriesMetadata(_ jpeg: [UInt8]) -> Bool {
  var pos = 2
  while pos + 4 <= jpeg.count, jpeg[pos] == 0xFF {
    let marker = jpeg[pos + 1]
    if marker == 0xDA { return false }
    if (0xE1...0xEF).contains(marker) || marker == 0xFE { return true }
    pos += 2 + (Int(jpeg[pos + 2]) << 8 | Int(jpeg[pos + 3]))
  }
  return false
}

@Suite struct ResamplerTests {
  @Test func flatImageStaysFlatToTheEdges() {
    var flat = PixelBuffer(width: 97, height: 61, channels: 3)
    for i in 0..<flat.pixels.count { flat.pixels[i] = 173 }
    let out = Resampler.resample(flat, region: Region(flat.size), to: PixelSize(width: 13, height: 7))
    // Renormalised edge weights: no darkening or ringing at the borders.
    #expect(out.pixels.allSatisfy { $0 == 173 })
  }

  @Test func downscaleKeepsTheImage() {
    let source = syntheticImage(width: 1200, height: 800)
    let out = Resampler.resample(source, region: Region(source.size), to: PixelSize(width: 300, height: 200))
    let expected = syntheticImage(width: 300, height: 200)
    #expect(out.size == PixelSize(width: 300, height: 200))
    #expect(meanDifference(out, expected) < 4)
  }

  @Test func cropsTheRequestedRegion() {
    let source = syntheticImage(width: 400, height: 400)
    // The right half only: its red channel must start near the middle of the gradient.
    let out = Resampler.resample(
      source, region: Region(x: 200, y: 0, width: 200, height: 400), to: PixelSize(width: 50, height: 100))
    #expect(abs(Int(out.pixels[0]) - 128) < 6)
    #expect(out.pixels[(50 - 1) * 3] > 245)
  }
}

@Suite struct ThumbnailerTests {
  let thumbnailer = Thumbnailer()

  @Test func rendersTheDefaultProfileAtTheRightSizes() throws {
    let jpeg = try JPEG.encode(syntheticImage(width: 3000, height: 2000), quality: 90)
    let (info, variants) = try thumbnailer.render(jpeg, variants: Profile.default.variants)
    #expect(info.size == PixelSize(width: 3000, height: 2000))
    #expect(variants.map(\.name) == ["large", "medium", "small", "square"])
    #expect(
      variants.map(\.size) == [
        PixelSize(width: 1600, height: 1067), PixelSize(width: 800, height: 533),
        PixelSize(width: 320, height: 213), PixelSize(width: 256, height: 256),
      ])
    for variant in variants {
      let decoded = try JPEG.decode(variant.data)
      #expect(decoded.size == variant.size)
      #expect(!carriesMetadata(variant.data))
    }
    // The large variant looks like the source scaled down.
    let large = try JPEG.decode(variants[0].data)
    #expect(meanDifference(large, syntheticImage(width: 1600, height: 1067)) < 6)
  }

  @Test func usesDCTScalingForLargeSources() throws {
    let jpeg = try JPEG.encode(syntheticImage(width: 7000, height: 4000), quality: 80)
    let (info, variants) = try thumbnailer.render(jpeg, variants: Profile.default.variants)
    #expect(info.decodeDenominator == 2)
    #expect(variants[0].size == PixelSize(width: 1600, height: 914))
  }

  @Test func refusesWhatIsNotAnImage() {
    #expect(throws: JobError(.unsupportedFormat, "the bytes are not an image format thumbd knows")) {
      try thumbnailer.render(Array("<html>not a photo</html>".utf8), variants: Profile.default.variants)
    }
  }

  @Test func refusesTruncatedJPEGs() throws {
    let jpeg = try JPEG.encode(syntheticImage(width: 800, height: 600), quality: 90)
    let truncated = Array(jpeg[0..<(jpeg.count / 2)])
    #expect { try thumbnailer.render(truncated, variants: Profile.default.variants) } throws: { error in
      (error as? JobError)?.code == .corruptImage
    }
  }

  @Test func refusesDecompressionBombsFromTheHeader() throws {
    let jpeg = try JPEG.encode(syntheticImage(width: 400, height: 300), quality: 50)
    let strict = Thumbnailer(maxPixels: 100_000)
    #expect { try strict.render(jpeg, variants: Profile.default.variants) } throws: { error in
      (error as? JobError)?.code == .tooLarge
    }
    // A tiny file whose SOF claims 65000x65000: refused before any pixel buffer exists.
    var bomb = jpeg
    if let sof = (0..<(bomb.count - 9)).first(where: { bomb[$0] == 0xFF && bomb[$0 + 1] == 0xC0 }) {
      bomb[sof + 5] = 0xFD; bomb[sof + 6] = 0xE8; bomb[sof + 7] = 0xFD; bomb[sof + 8] = 0xE8
    }
    #expect { try thumbnailer.render(bomb, variants: Profile.default.variants) } throws: { error in
      (error as? JobError)?.code == .tooLarge
    }
  }
}

@Suite(.enabled(if: SharedCorpus.isAvailable, Comment(rawValue: SharedCorpus.skipReason))) struct CorpusTests
{
  let thumbnailer = Thumbnailer()

  @Test(arguments: ["Landscape", "Portrait"])
  func everyOrientationComesOutUpright(kind: String) throws {
    func small(_ n: Int) throws -> PixelBuffer {
      let (_, variants) = try thumbnailer.render(
        try SharedCorpus.bytes("orientation/\(kind)_\(n).jpg"), variants: Profile.default.variants)
      return try JPEG.decode(variants[2].data)
    }
    let reference = try small(1)
    for n in [0, 2, 3, 4, 5, 6, 7, 8] {
      let other = try small(n)
      #expect(other.size == reference.size, "\(kind)_\(n)")
      if other.size == reference.size {
        #expect(meanDifference(other, reference) < 8, "\(kind)_\(n) differs from \(kind)_1")
      }
    }
    // The check can fail: the reference turned 180 degrees is far from it.
    #expect(meanDifference(reference.oriented(.rotated180), reference) > 20)
  }

  @Test(arguments: ["exif/DSCN0010.jpg", "exif/DSCN0012.jpg", "exif/Canon_40D.jpg", "exif/Nikon_D70.jpg"])
  func noOutputCarriesEXIFOrGPS(path: String) throws {
    let original = try SharedCorpus.bytes(path)
    #expect(carriesMetadata(original))  // the originals do carry it
    let (_, variants) = try thumbnailer.render(original, variants: Profile.default.variants)
    for variant in variants {
      #expect(!carriesMetadata(variant.data), "\(path) \(variant.name)")
      #expect(!variant.data.starts(with: [0xFF, 0xD8, 0xFF, 0xE1]))
    }
  }

  @Test(arguments: [
    "invalid/clusterfuzz-testcase-minimized-file-fuzzer-5120279175102464.heic", "invalid/github_15.heic",
    "invalid/image00971.jpg", "invalid/image01088.jpg",
  ])
  func brokenInputsEndClearly(path: String) throws {
    do {
      let (_, variants) = try thumbnailer.render(
        try SharedCorpus.bytes(path), variants: Profile.default.variants)
      // The two "invalid" JPEGs carry malformed XMP but valid image data (djpeg decodes them without
      // a warning): a correct thumbnail, stripped of the bad metadata, is the right answer for them.
      #expect(path.hasSuffix(".jpg"))
      #expect(variants.count == 4)
      #expect(variants.allSatisfy { !carriesMetadata($0.data) })
    } catch let error as JobError {
      #expect(error.code.isPermanent, "\(path): \(error)")
    }
  }
}
