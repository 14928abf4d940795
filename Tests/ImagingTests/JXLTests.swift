import Foundation
import TestSupport
import Testing
import ThumbCore

@testable import Imaging

/// JPEG XL: the corpus's photograph decodes as an independent decoder (jxl-oxide, through Pillow's
/// plugin) shows it; a file cut short or damaged ends as corrupt_image.
@Suite(.enabled(if: SharedCorpus.isAvailable, Comment(rawValue: SharedCorpus.skipReason)))
struct JXLTests {
  @Test func theCorpusPhotographDecodesAsAnotherDecoderShowsIt() throws {
    let bytes = try SharedCorpus.bytes("stills/8bit-sRGB.jxl")
    #expect(ImageFormat.sniff(bytes) == .jxl)
    let decoder = try SourceDecoders.make(bytes, maxPixels: 100_000_000)
    #expect(
      decoder.header.storedSize == PixelSize(width: 1440, height: 1080) && decoder.header.format == .jxl)
    let (info, variants) = try Thumbnailer().render(
      bytes, variants: [variant("full", 1440, 1080, format: .png)])
    #expect(info.size == PixelSize(width: 1440, height: 1080) && variants[0].size == info.size)
    guard FileManager.default.isExecutableFile(atPath: HDRClips.python),
      let root = SharedCorpus.root,
      let png = try ReferenceDecoder.png(root.appendingPathComponent("stills/8bit-sRGB.jxl").path)
    else { return }
    let expected = try decodeAny(png)
    let ours = try decodeAny(variants[0].data)
    try #require(ours.size == expected.size)
    var total = 0
    for i in 0..<(ours.width * ours.height) {
      for c in 0..<3 {
        total += abs(
          Int(ours.pixels[i * ours.channels + c]) - Int(expected.pixels[i * expected.channels + c]))
      }
    }
    let mad = Double(total) / Double(ours.width * ours.height * 3)
    #expect(mad < 1.5, "\(mad) levels from jxl-oxide's decode")
  }

  @Test func aCutOrDamagedFileIsCorrupt() throws {
    let bytes = try SharedCorpus.bytes("stills/8bit-sRGB.jxl")
    for broken in [Array(bytes.prefix(bytes.count / 2)), Array(bytes.prefix(40))] {
      do {
        _ = try Thumbnailer().render(broken, variants: Profile.default.variants)
        Issue.record("a JPEG XL cut to \(broken.count) bytes rendered")
      } catch {
        #expect(error.code == .corruptImage, "\(error)")
      }
    }
    var damaged = bytes
    for i in stride(from: bytes.count / 3, to: bytes.count, by: 61) { damaged[i] ^= 0x5A }
    do {
      _ = try Thumbnailer().render(damaged, variants: Profile.default.variants)
    } catch {
      #expect(error.code == .corruptImage, "\(error)")
    }
  }

  /// The codestream's orientation: cjxl copies a JPEG's EXIF orientation into it. Each of the corpus's
  /// eight orientations of one photograph, re-encoded as JPEG XL from its pixels, renders upright as
  /// the JPEG does: the same size and the same picture (SSIM), mirrored and turned ones included.
  @Test(
    .enabled(
      if: FileManager.default.isExecutableFile(atPath: "/usr/bin/cjxl"), "cjxl (libjxl-tools) is missing"),
    arguments: 1...8)
  func theCodestreamOrientationIsApplied(_ orientation: Int) throws {
    let jpeg = try SharedCorpus.bytes("orientation/Landscape_\(orientation).jpg")
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
      "thumbd-jxl-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let input = folder.appendingPathComponent("in.jpg")
    let output = folder.appendingPathComponent("out.jxl")
    try Data(jpeg).write(to: input)
    let cjxl = Process()
    cjxl.executableURL = URL(fileURLWithPath: "/usr/bin/cjxl")
    cjxl.arguments = [input.path, output.path, "-j", "0", "-q", "95"]
    cjxl.standardError = FileHandle.nullDevice
    cjxl.standardOutput = FileHandle.nullDevice
    try cjxl.run()
    cjxl.waitUntilExit()
    let jxl = [UInt8](try Data(contentsOf: output))
    let decoder = try SourceDecoders.make(jxl, maxPixels: 100_000_000)
    #expect(
      decoder.header.orientation.rawValue == orientation, "the codestream says \(decoder.header.orientation)")
    let spec = [variant("full", 600, 600, format: .png)]
    let (jpegInfo, fromJPEG) = try Thumbnailer().render(jpeg, variants: spec)
    let (jxlInfo, fromJXL) = try Thumbnailer().render(jxl, variants: spec)
    #expect(jxlInfo.size == jpegInfo.size && fromJXL[0].size == fromJPEG[0].size, "\(jxlInfo.size)")
    let similarity = ssim(try decodeAny(fromJXL[0].data), try decodeAny(fromJPEG[0].data))
    #expect(similarity >= 0.95, "SSIM \(similarity) to the JPEG's upright rendering")
  }
}
