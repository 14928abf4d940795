import Foundation
import TestSupport
import Testing
import ThumbCore

@testable import Imaging

/// `thumbd thumbnail`, as a user runs it on files that share a stem.
@Suite(.enabled(if: ThumbdBinary.url != nil, Comment(rawValue: ThumbdBinary.skipReason)))
struct ThumbnailCommandTests {
  @Test func twoFilesWithOneStemWriteBothSetsOfThumbnails() throws {
    let folder = try makeTemporaryDirectory()
    let first = folder.appendingPathComponent("a.jpg")
    let second = folder.appendingPathComponent("a.jpeg")
    try Data(try makeTestJPEG(width: 1200, height: 900)).write(to: first)
    try Data(try makeTestJPEG(width: 900, height: 600)).write(to: second)
    let out = folder.appendingPathComponent("out")
    let run = try runProgram(
      try #require(ThumbdBinary.url).path, ["thumbnail", "--out", out.path, first.path, second.path],
      withStandardError: true)
    #expect(run.code == 0, "\(run.output)")
    let written = try FileManager.default.contentsOfDirectory(atPath: out.path).sorted()
    let variants = ["large", "medium", "small", "square"]
    #expect(written == (variants.map { "a.jpeg_\($0).jpg" } + variants.map { "a_\($0).jpg" }).sorted())
    // Each set is its own file's: the large variants keep their originals' sizes (never upscaled).
    for (name, width) in [("a_large.jpg", 1200), ("a.jpeg_large.jpg", 900)] {
      let bytes = [UInt8](try Data(contentsOf: out.appendingPathComponent(name)))
      #expect(ImageProbe.pixelSize(bytes, format: .jpeg)?.width == width, "\(name)")
    }
  }

  /// The case phones make: the same photo name as JPEG and as HEIC.
  @Test func aJPEGAndAHEICWithOneStemWriteBoth() throws {
    let folder = try makeTemporaryDirectory()
    let jpeg = folder.appendingPathComponent("a.jpg")
    let heic = folder.appendingPathComponent("a.heic")
    try Data(try makeTestJPEG(width: 1200, height: 900)).write(to: jpeg)
    var picture = PixelBuffer(width: 1000, height: 700, channels: 3)
    for i in 0..<picture.pixels.count { picture.pixels[i] = UInt8(truncatingIfNeeded: i / 3 % 1000 / 4) }
    try Data(try HEIFEncoder.encode(picture, quality: 80, codec: .hevc)).write(to: heic)
    let out = folder.appendingPathComponent("out")
    let run = try runProgram(
      try #require(ThumbdBinary.url).path, ["thumbnail", "--out", out.path, jpeg.path, heic.path],
      withStandardError: true)
    #expect(run.code == 0, "\(run.output)")
    let written = try FileManager.default.contentsOfDirectory(atPath: out.path).sorted()
    let variants = ["large", "medium", "small", "square"]
    #expect(written == (variants.map { "a.heic_\($0).jpg" } + variants.map { "a_\($0).jpg" }).sorted())
    for (name, width) in [("a_large.jpg", 1200), ("a.heic_large.jpg", 1000)] {
      let bytes = [UInt8](try Data(contentsOf: out.appendingPathComponent(name)))
      #expect(ImageProbe.pixelSize(bytes, format: .jpeg)?.width == width, "\(name)")
    }
  }
}
