import Foundation
import TestSupport
import Testing
import ThumbCore

@testable import Imaging

/// `thumbd thumbnail`, as a user runs it on files that share a stem.
@Suite(.enabled(if: ThumbdBinary.url != nil, Comment(rawValue: ThumbdBinary.skipReason)))
struct ThumbnailCommandTests {
  /// Writes `first` as `a.jpg` (1200 wide) and `second` as `a.<ext>`, runs `thumbd thumbnail` on both,
  /// and checks that both sets are written, the later one under `a.<ext>_`, each at its own file's
  /// width (the large variants keep their originals' sizes: never upscaled).
  func bothSetsAreWritten(second: [UInt8], extension ext: String, width: Int) throws {
    let folder = try makeTemporaryDirectory()
    let first = folder.appendingPathComponent("a.jpg")
    let other = folder.appendingPathComponent("a.\(ext)")
    try Data(try makeTestJPEG(width: 1200, height: 900)).write(to: first)
    try Data(second).write(to: other)
    let out = folder.appendingPathComponent("out")
    let run = try runProgram(
      try #require(ThumbdBinary.url).path, ["thumbnail", "--out", out.path, first.path, other.path],
      withStandardError: true)
    #expect(run.code == 0, "\(run.output)")
    let written = try FileManager.default.contentsOfDirectory(atPath: out.path).sorted()
    let variants = ["large", "medium", "small", "square"]
    #expect(written == (variants.map { "a.\(ext)_\($0).jpg" } + variants.map { "a_\($0).jpg" }).sorted())
    for (name, expected) in [("a_large.jpg", 1200), ("a.\(ext)_large.jpg", width)] {
      let bytes = [UInt8](try Data(contentsOf: out.appendingPathComponent(name)))
      #expect(ImageProbe.pixelSize(bytes, format: .jpeg)?.width == expected, "\(name)")
    }
  }

  @Test func twoFilesWithOneStemWriteBothSetsOfThumbnails() throws {
    try bothSetsAreWritten(second: try makeTestJPEG(width: 900, height: 600), extension: "jpeg", width: 900)
  }

  /// The case phones make: the same photo name as JPEG and as HEIC.
  @Test func aJPEGAndAHEICWithOneStemWriteBoth() throws {
    var picture = PixelBuffer(width: 1000, height: 700, channels: 3)
    for i in 0..<picture.pixels.count { picture.pixels[i] = UInt8(truncatingIfNeeded: i / 3 % 1000 / 4) }
    try bothSetsAreWritten(
      second: try HEIFEncoder.encode(picture, quality: 80, codec: .hevc), extension: "heic", width: 1000)
  }
}
