import Testing
import ThumbCore

@testable import Imaging

/// The format table against the decoders: a format the table says is not decoded is refused by name
/// before any library sees it, one it says is decoded reaches its decoder (whose error, for bytes that
/// only begin like the format, is its own); the outputs thumbd writes come back through the table as
/// their own format and open with the header's size; a video in parts opens, a photo in parts does not.
struct FormatTableTests {
  @Test func theDecodersFollowTheTable() throws {
    for traits in MediaFormats.table {
      let signature = try #require(traits.signatures.first.map(\.runs) ?? brandBox(traits))
      var bytes = [UInt8](repeating: 0x20, count: max(traits.minimumBytes, 64))
      for run in signature {
        bytes.replaceSubrange(run.offset..<(run.offset + run.bytes.count), with: run.bytes)
      }
      #expect(ImageFormat.sniff(bytes) == traits.format)
      do throws(JobError) {
        _ = try SourceDecoders.make(bytes, maxPixels: 1 << 24)
        Issue.record("\(traits.format): a signature alone opened")
      } catch {
        let refusedByName = error.message.hasSuffix("originals are not supported")
        #expect(refusedByName == !traits.decodes, "\(traits.format): \(error)")
      }
    }
  }

  /// Each decoded format of the table has exactly one decoder, no decoder claims a format the table
  /// refuses, and each decoder's estimate falls to the table's cost column.
  @Test func everyDecodedFormatHasOneDecoder() {
    var claimed: [ImageFormat] = []
    for decoder in SourceDecoders.all {
      let formats = decoder.formats
      claimed += formats
    }
    for traits in MediaFormats.table {
      let claims = claimed.filter { $0 == traits.format }.count
      #expect(claims == (traits.decodes ? 1 : 0), "\(traits.format): claimed by \(claims) decoders")
    }
    #expect(claimed.count == Set(claimed).count, "a format claimed twice: \(claimed)")
  }

  /// The cost column is what the model charges: a 1000x1000 HEIC's codec picture, GIF's canvases, and
  /// lossless WebP's buffer only when the file is coded as a whole image.
  @Test func theCostColumnIsWhatTheModelCharges() {
    let size = PixelSize(width: 1000, height: 1000)
    func codec(_ format: ImageFormat, alpha: Bool = false, whole: Bool = true) -> Int {
      MemoryCostModel.interleavedDecode(
        format: format, stored: size, orientation: .up, hasAlpha: alpha, compressedBytes: 0,
        variants: [variant("v", 100, 100)], wholeImageCodec: whole
      ).codec
    }
    #expect(codec(.heif) == 3_000_000 && codec(.heif, alpha: true) == 5_000_000)
    #expect(codec(.jxl) == 12_000_000 && codec(.gif) == 5_001_000 && codec(.png) == 0)
    #expect(codec(.webp) == 4_000_000 && codec(.webp, whole: false) == 0)
  }

  @Test func theOutputsOpenAsTheirFormat() throws {
    let source = try Thumbnailer().render(
      JPEG.encode(TestImages.solid(width: 64, height: 48, (200, 40, 90)), quality: 90),
      variants: [variant("v", 64, 48)])
    #expect(source.0.format == .jpeg)
    for (format, expected) in [(VariantFormat.png, ImageFormat.png), (.webp, .webp), (.avif, .avif)] {
      let made = try Thumbnailer().render(
        JPEG.encode(TestImages.solid(width: 64, height: 48, (200, 40, 90)), quality: 90),
        variants: [variant("v", 64, 48, format: format)])
      let opened = try Thumbnailer().open(.whole(made.1[0].data))
      #expect(opened.format == expected)
      let probe = try #require(Thumbnailer().probe(opened, variants: [variant("v", 32, 24)]))
      #expect(probe.estimate.total > 0 && probe.media == nil)
    }
  }

  @Test func onlyAFormatReadInPartsOpensFromParts() throws {
    let jpeg = try JPEG.encode(TestImages.solid(width: 64, height: 48, (200, 40, 90)), quality: 90)
    let parts = OriginalBytes.parts(RangedOriginal(total: jpeg.count + 10, parts: [(0, jpeg)]))
    do throws(JobError) {
      _ = try Thumbnailer().open(parts)
      Issue.record("a JPEG in parts opened")
    } catch {
      #expect(error.code == .internalError, "\(error)")
    }
  }

  /// An ISO box with the format's first brand, as runs.
  func brandBox(_ traits: FormatTraits) -> [(offset: Int, bytes: [UInt8])]? {
    guard let brand = traits.brands.sorted().first else { return nil }
    return [(0, [0, 0, 0, 20] + Array("ftyp\(brand)".utf8) + [0, 0, 0, 0] + Array(brand.utf8))]
  }
}
