import Foundation
import TestSupport
import Testing
import ThumbCore

@testable import Imaging

/// Uploads cut short: what arrived is rendered when at most 1% of the rows is missing, with a warning;
/// more is refused as corrupt_image.
@Suite struct TruncatedJPEGTests {
  let thumbnailer = Thumbnailer()

  /// A 12 MP-like photo stand-in: smooth gradients with fine texture, so the entropy-coded data is
  /// spread over the picture as a photo's is.
  func photo(width: Int = 2400, height: Int = 1800) throws -> [UInt8] {
    var image = PixelBuffer(width: width, height: height, channels: 3)
    var noise: UInt32 = 1
    for y in 0..<height {
      for x in 0..<width {
        noise = noise &* 1_664_525 &+ 1_013_904_223
        let grain = Int(noise >> 28)
        let i = (y * width + x) * 3
        image.pixels[i] = UInt8(min(255, x * 240 / width + grain))
        image.pixels[i + 1] = UInt8(min(255, y * 240 / height + grain))
        image.pixels[i + 2] = UInt8(min(255, (x + y) * 120 / (width + height) + 60 + grain))
      }
    }
    return try JPEG.encode(image, quality: 90)
  }

  @Test func theLastBytesMissingRenderWithAWarning() throws {
    let bytes = try photo()
    let (info, variants) = try thumbnailer.render(
      Array(bytes.dropLast(2)), variants: Profile.default.variants)
    #expect(variants.count == 4)
    #expect(info.warnings.map(\.code) == [RenderWarning.truncatedImage])
    #expect(info.warnings.first?.message.contains("less than one row") == true, "\(info.warnings)")
    // The whole file: no warning.
    #expect(try thumbnailer.render(bytes, variants: Profile.default.variants).0.warnings.isEmpty)
  }

  @Test func aThinGreyStripRendersAndSaysHowManyRows() throws {
    let bytes = try photo()
    // About 0.6% of the data: the bottom rows' share of it.
    let (info, _) = try thumbnailer.render(
      Array(bytes.dropLast(bytes.count / 160)), variants: Profile.default.variants)
    let warning = try #require(info.warnings.first)
    #expect(warning.code == RenderWarning.truncatedImage)
    #expect(
      warning.message.contains("rows") && warning.message.contains("of 1800 rows"), "\(warning.message)")
  }

  @Test func aFileCutInHalfIsRefused() throws {
    let bytes = try photo()
    #expect {
      try thumbnailer.render(Array(bytes.prefix(bytes.count / 2)), variants: Profile.default.variants)
    } throws: { error in
      (error as? JobError)?.code == .corruptImage
        && (error as? JobError)?.message.contains("the file ends early") == true
    }
  }

  /// A progressive file cut short has no flat rows (every block has its first scan's DC): it is refused
  /// whatever is missing, as are other files of several scans.
  @Test func aProgressiveFileCutShortIsRefused() throws {
    var image = PixelBuffer(width: 1200, height: 900, channels: 3)
    for i in 0..<image.pixels.count { image.pixels[i] = UInt8(truncatingIfNeeded: i * 7 / 3) }
    let progressive = try TurboCompressor().encode(image, quality: 85, subsampling: .s420, progressive: true)
    #expect(progressive.withUnsafeBytes(JPEGSegments.scanCount) > 1)
    #expect(try thumbnailer.render(progressive, variants: Profile.default.variants).0.warnings.isEmpty)
    for cut in [progressive.count / 2, 64] {
      #expect {
        try thumbnailer.render(Array(progressive.dropLast(cut)), variants: Profile.default.variants)
      } throws: { error in
        (error as? JobError)?.code == .corruptImage
          && (error as? JobError)?.message.contains("several scans") == true
      }
    }
  }

  /// libjpeg keeps its first warning's text only: a file whose entropy-coded data is damaged a little
  /// (warned first) and that is also cut in half is still judged by its grey rows, and refused.
  @Test func anEarlierWarningDoesNotHideTheEnd() throws {
    var bytes = try photo()
    for i in (bytes.count / 5)..<(bytes.count / 5 + 48) { bytes[i] = 0x00 }
    let cut = Array(bytes.prefix(bytes.count / 2))
    #expect {
      try thumbnailer.render(cut, variants: Profile.default.variants)
    } throws: { error in
      (error as? JobError)?.code == .corruptImage
        && (error as? JobError)?.message.contains("the file ends early") == true
    }
  }

  /// Scans are counted in the picture's own data: a baseline file has one, whatever its EXIF thumbnail.
  @Test(.enabled(if: SharedCorpus.isAvailable, Comment(rawValue: SharedCorpus.skipReason)))
  func scansAreThePicturesOwn() throws {
    #expect(
      try SharedCorpus.bytes("phone/drewnoakes__Apple_iPhone_6.jpg").withUnsafeBytes(JPEGSegments.scanCount)
        == 1)
    #expect(try photo().withUnsafeBytes(JPEGSegments.scanCount) == 1)
  }

  /// The missing rows are the bottom rows flat at 128 in every plane, counted in the decode's rows.
  @Test func missingRowsAreTheFlatGreyRowsAtTheBottom() {
    var luma = Plane(width: 8, height: 10, stride: 8, rows: 10)
    var chroma = Plane(width: 4, height: 5, stride: 4, rows: 5)
    luma.withUnsafeMutableBufferPointer { p in
      for i in 0..<p.count { p[i] = i >= 6 * 8 ? 128 : 40 }
    }
    chroma.withUnsafeMutableBufferPointer { p in
      for i in 0..<p.count { p[i] = i >= 3 * 4 ? 128 : 90 }
    }
    let image = PlanarImage(
      model: .yCbCr, planes: [luma, chroma, chroma],
      subsampling: [
        .init(horizontal: 1, vertical: 1), .init(horizontal: 2, vertical: 2),
        .init(horizontal: 2, vertical: 2),
      ])
    #expect(TruncatedJPEG.missingRows(image) == 4)
  }

  /// Cuts of real phone JPEGs, the cases the threshold was set from (docs/imaging.md): their last 2
  /// bytes or 4 KB lost render; 32 KB lost leaves 0.5-0.7% of the rows grey on two of them (rendered)
  /// and 2% on the iPhone 6 (refused); a tenth or half of the file lost is refused.
  @Test(.enabled(if: SharedCorpus.isAvailable, Comment(rawValue: SharedCorpus.skipReason)))
  func realPhonePhotosCutShort() throws {
    let galaxy = "phone/ChrisLomon__GalaxyS22_2_Original.jpg"
    let iPhone = "phone/drewnoakes__Apple_iPhone_6.jpg"
    let s7 = "phone/drewnoakes__Samsung_SM-G935L_Galaxy_S7_Edge_.jpg"
    let cases: [(String, Int, Bool)] = [
      (galaxy, 2, true), (galaxy, 4096, true), (galaxy, 32768, true),
      (iPhone, 2, true), (iPhone, 4096, true), (iPhone, 32768, false),
      (s7, 2, true), (s7, 4096, true), (s7, 32768, true),
    ]
    for (name, cut, renders) in cases {
      let bytes = try SharedCorpus.bytes(name)
      let result = Result { () throws(JobError) in
        try thumbnailer.render(Array(bytes.dropLast(cut)), variants: Profile.default.variants)
      }
      switch result {
      case .success(let (info, variants)):
        #expect(renders, "\(name) less \(cut) bytes rendered: \(info.warnings)")
        #expect(variants.count == 4)
        #expect(info.warnings.allSatisfy { $0.code == RenderWarning.truncatedImage })
        if cut == 32768 { #expect(info.warnings.count == 1, "\(name) less \(cut) bytes") }
      case .failure(let error):
        #expect(!renders && error.code == .corruptImage, "\(name) less \(cut) bytes: \(error)")
      }
    }
    for name in [galaxy, iPhone, s7] {
      let bytes = try SharedCorpus.bytes(name)
      #expect(throws: JobError.self, "\(name) less a tenth") {
        try thumbnailer.render(Array(bytes.dropLast(bytes.count / 10)), variants: Profile.default.variants)
      }
      #expect(throws: JobError.self, "\(name) cut in half") {
        try thumbnailer.render(Array(bytes.prefix(bytes.count / 2)), variants: Profile.default.variants)
      }
    }
  }
}
