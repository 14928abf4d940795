import Foundation
import Testing

@testable import ThumbCore

/// Replays the kept fuzz corpus (FuzzCorpus/, written by fuzz/run.sh: docs/fuzzing.md) through every parser
/// the fuzzer drives, checking the invariants fuzz/*Targets.swift checks (keep the two in step). Files named
/// crash-* are inputs that once crashed a parser or broke an invariant: they must stay fixed; seed-* are
/// fuzz/run.sh's seeds, one valid header per format.
@Suite struct FuzzRegressionTests {
  @Test func corpusIsKept() {
    #expect(FuzzCorpus.files.count >= 10, "\(FuzzCorpus.directory.path) holds too few inputs")
    #expect(FuzzCorpus.files.contains { $0.hasPrefix("crash-") }, "the crashers are gone")
  }

  /// The corpus still reaches every parser's answer, not only its early returns.
  @Test func corpusReachesEveryParser() throws {
    let inputs = try FuzzCorpus.files.map(FuzzCorpus.bytes)
    for format in FuzzCorpus.formats {
      #expect(inputs.contains { ImageFormat.sniff($0) == format }, "no input sniffs as \(format)")
    }
    for format in [ImageFormat.jpeg, .png, .gif, .webp] {
      #expect(inputs.contains { ImageProbe.pixelSize($0, format: format) != nil }, "no \(format) size")
    }
    #expect(inputs.contains { ExifReader.jpegOrientation($0) != nil }, "no JPEG orientation")
    #expect(inputs.contains { $0.withUnsafeBytes { ExifReader.tiffOrientation($0) } != nil }, "no TIFF one")
  }

  /// Found by the fuzzer: a PNG declaring a side over 2^31-1 gave a size the int columns of
  /// thumbs.originals cannot hold (the originals row was then never written).
  @Test func pngSideOverInt32IsNoSize() throws {
    let bytes = try FuzzCorpus.bytes("crash-png-width-over-int32")
    #expect(ImageFormat.sniff(bytes) == .png)
    #expect(ImageProbe.pixelSize(bytes, format: .png) == nil)
  }

  /// Found by the fuzzer: 14 bytes "BM", "ftyp", "msf1" sniffed as HEIF, and as BMP once more bytes
  /// followed (BMP needs 26). "BM" now claims the bytes whatever their length.
  @Test func shortBMIsNoOtherFormat() throws {
    let bytes = try FuzzCorpus.bytes("crash-sniff-short-bm-ftyp-heif-not-bmp")
    #expect(ImageFormat.sniff(bytes) == nil)
    #expect(ImageFormat.sniff(bytes + [UInt8](repeating: 0, count: 12)) == .bmp)
  }

  @Test(arguments: FuzzCorpus.files)
  func exifReadersHoldTheirInvariants(file: String) throws {
    let bytes = try FuzzCorpus.bytes(file)
    let extended = FuzzCorpus.extended(bytes)

    let jpeg = ExifReader.jpegOrientation(bytes)
    #expect(bytes.withUnsafeBytes { ExifReader.jpegOrientation($0) } == jpeg)
    if let jpeg {
      #expect(bytes.starts(with: [0xFF, 0xD8]), "orientation \(jpeg) without SOI")
      #expect(ExifReader.jpegOrientation(extended) == jpeg, "appended bytes changed \(jpeg)")
    }

    let tiff = bytes.withUnsafeBytes { ExifReader.tiffOrientation($0) }
    if let tiff {
      #expect(
        bytes.starts(with: [0x49, 0x49, 0x2A, 0x00]) || bytes.starts(with: [0x4D, 0x4D, 0x00, 0x2A]),
        "TIFF orientation \(tiff) without a TIFF header")
      #expect(extended.withUnsafeBytes { ExifReader.tiffOrientation($0) } == tiff)
    }

    let icc = JPEGSegments.iccProfile(bytes)
    #expect(bytes.withUnsafeBytes { JPEGSegments.iccProfile($0) } == icc)
    if let icc {
      #expect(bytes.starts(with: [0xFF, 0xD8]), "an ICC profile without SOI")
      #expect(icc.count < bytes.count, "an ICC profile longer than its file")
    }
  }

  @Test(arguments: FuzzCorpus.files)
  func headerReadersHoldTheirInvariants(file: String) throws {
    let bytes = try FuzzCorpus.bytes(file)
    let extended = FuzzCorpus.extended(bytes)

    if let format = ImageFormat.sniff(bytes) {
      #expect(bytes.count >= FuzzCorpus.minimumLength(format), "\(format) from \(bytes.count) bytes")
      #expect(ImageFormat.sniff(extended) == format, "appended bytes changed the sniffed \(format)")
    }

    let frame = ImageProbe.jpegFrame(bytes)
    if let frame {
      #expect((1...65535).contains(frame.size.width) && (1...65535).contains(frame.size.height))
      #expect((1...255).contains(frame.components))
      #expect(
        frame.sampling.allSatisfy { (1...15).contains($0.horizontal) && (1...15).contains($0.vertical) })
      #expect(frame.coefficientBlocks > 0)
      #expect(ImageProbe.jpegFrame(extended) == frame, "appended bytes changed the JPEG frame")
    }

    for format in FuzzCorpus.formats {
      guard let size = ImageProbe.pixelSize(bytes, format: format) else { continue }
      #expect(size.width > 0 && size.height > 0, "\(format) size \(size)")
      let side = FuzzCorpus.maximumSide(format)
      #expect(size.width <= side && size.height <= side, "\(format) size \(size)")
      #expect(bytes.count >= FuzzCorpus.minimumLength(format), "\(format) size from \(bytes.count) bytes")
      if format == .jpeg { #expect(size == frame?.size, "pixelSize \(size) is not jpegFrame's") }
      #expect(ImageProbe.pixelSize(extended, format: format) == size, "appended bytes changed \(size)")
    }
  }
}

/// The kept corpus and the invariants' figures, as in fuzz/Fuzz.swift and fuzz/ProbeTargets.swift.
enum FuzzCorpus {
  static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("FuzzCorpus")

  static let files: [String] =
    ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [])
    .filter { !$0.hasPrefix(".") }.sorted()

  static func bytes(_ file: String) throws -> [UInt8] {
    [UInt8](try Data(contentsOf: directory.appendingPathComponent(file)))
  }

  /// The input with the harness's tail appended: every parser answers from a prefix of its input, so an
  /// answer it found must not change when more bytes follow.
  static func extended(_ bytes: [UInt8]) -> [UInt8] {
    bytes + [0xFF, 0xD9, 0xFF, 0xE1, 0, 0, 0, 0] + bytes.prefix(24)
  }

  static let formats: [ImageFormat] = [.jpeg, .png, .webp, .heif, .avif, .gif, .tiff, .bmp]

  /// The fewest bytes from which a format can be sniffed, or its size read.
  static func minimumLength(_ format: ImageFormat) -> Int {
    switch format {
    case .jpeg: 3
    case .png: 8
    case .webp, .heif, .avif: 12
    case .gif: 6
    case .tiff: 4
    case .bmp: 26
    case .video: 4
    case .jxl: 2
    }
  }

  /// The largest side a header can declare; PNG's is the spec's 2^31-1, also what an int column holds.
  static func maximumSide(_ format: ImageFormat) -> Int {
    switch format {
    case .jpeg, .gif: 65535
    case .webp: 1 << 24
    case .png: Int(Int32.max)
    case .heif, .avif, .tiff, .bmp, .video, .jxl: 0
    }
  }
}
