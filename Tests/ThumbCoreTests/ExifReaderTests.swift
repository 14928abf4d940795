import TestSupport
import Testing

@testable import ThumbCore

@Suite struct ExifReaderTests {
  @Test(.enabled(if: SharedCorpus.isAvailable, Comment(rawValue: SharedCorpus.skipReason)), arguments: 0...8)
  func readsTheOrientationCorpus(value: Int) throws {
    for kind in ["Landscape", "Portrait"] {
      let bytes = try SharedCorpus.bytes("orientation/\(kind)_\(value).jpg")
      // Value 0 is not a valid orientation: those files must read as "none" (upright).
      #expect(ExifReader.jpegOrientation(bytes)?.rawValue == (value == 0 ? nil : value), "\(kind)_\(value)")
    }
  }

  @Test func readsBigEndianTIFF() {
    // "MM", 42, IFD at 8, one entry: tag 0x0112, SHORT, count 1, value 6.
    let tiff: [UInt8] = [
      0x4D, 0x4D, 0, 42, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, 6, 0, 0, 0, 0, 0,
    ]
    #expect(tiff.withUnsafeBytes { ExifReader.tiffOrientation($0) } == .rotated90Clockwise)
  }

  @Test(.enabled(if: SharedCorpus.isAvailable, Comment(rawValue: SharedCorpus.skipReason)))
  func survivesEveryTruncationOfARealFile() throws {
    let bytes = try SharedCorpus.bytes("orientation/Landscape_6.jpg")
    // The header lies in the first few kilobytes: every cut inside it must answer, not crash.
    for cut in 0..<min(bytes.count, 4096) {
      let orientation = ExifReader.jpegOrientation(Array(bytes[0..<cut]))
      #expect(orientation == nil || orientation == .rotated90Clockwise)
    }
  }

  @Test func survivesRandomAndHostileBytes() {
    var generator = SystemRandomNumberGenerator()
    for _ in 0..<2000 {
      let length = Int.random(in: 0..<300, using: &generator)
      var bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
      if bytes.count > 12 {  // make most of them look like JPEG + APP1 Exif so the deep paths run
        bytes.replaceSubrange(
          0..<12, with: [0xFF, 0xD8, 0xFF, 0xE1, 0x00, 0xFF, 0x45, 0x78, 0x69, 0x66, 0, 0])
      }
      _ = ExifReader.jpegOrientation(bytes)
    }
    // An IFD whose entry count points far past the end.
    let lying: [UInt8] =
      [0xFF, 0xD8, 0xFF, 0xE1, 0x00, 0x18] + Array("Exif".utf8) + [0, 0]
      + [0x49, 0x49, 42, 0, 8, 0, 0, 0, 0xFF, 0xFF, 0x12, 0x01]
    #expect(ExifReader.jpegOrientation(lying) == nil)
  }
}
