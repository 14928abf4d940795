import Foundation
import TestSupport
import Testing
import ThumbCore

@testable import Imaging

/// The test files of giflib and libjxl (SuiteFiles): each one either decoder accepts renders upright at
/// its size, within SSIM 0.95 of another decoder's picture of the same frame; each renders or ends as a
/// classified error, never a crash.
@Suite(.enabled(if: SuiteFiles.isAvailable, Comment(rawValue: SuiteFiles.skipReason)))
struct SuiteFileTests {
  /// Where another decoder's picture is not the one to compare with, and why.
  enum Reference {
    case pillow
    /// libjxl's own expected first frame, shipped beside the file: Pillow's JPEG XL plugin gives an
    /// animation's last frame.
    case png(String)
    /// jxl-oxide refuses the file (a box with a 64-bit size); libjxl's djxl decodes it.
    case djxl
    /// A PQ grey gradient: tone-mapped to SDR by design, checked by its shape (HDRStillTests check the
    /// tone map's levels).
    case hdrGradient
  }

  static func reference(for path: String) -> Reference {
    switch URL(fileURLWithPath: path).lastPathComponent {
    case "cropped_traffic_light.jxl": return .png("cropped_traffic_light_frame-0.png")
    case "square-extended-size-container.jxl": return .djxl
    case "pq_gradient.jxl": return .hdrGradient
    default: return .pillow
    }
  }

  @Test func bothSuitesAreThere() {
    let gifs = SuiteFiles.files.filter { $0.hasSuffix(".gif") }.count
    let jxls = SuiteFiles.files.filter { $0.hasSuffix(".jxl") }.count
    #expect(gifs >= 30 && jxls >= 6, "\(gifs) GIFs, \(jxls) JPEG XL files")
  }

  @Test(arguments: SuiteFiles.files)
  func eachFileRendersAsAnotherDecoderShowsIt(_ path: String) throws {
    let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    let full = VariantSpec(name: "full", width: 8192, height: 8192, fit: .inside, format: .png, quality: 100)
    let info: SourceInfo
    let out: [RenderedVariant]
    do {
      (info, out) = try Thumbnailer().render(bytes, variants: [full])
    } catch {
      // Refused: only a file no other decoder reads either, and with a classified error.
      #expect(try ReferenceDecoder.png(path) == nil, "\(path): \(error), but Pillow decodes it")
      #expect([.corruptImage, .unsupportedFormat, .tooLarge].contains(error.code), "\(path): \(error)")
      return
    }
    let ours = try decodeAny(out[0].data)
    #expect(out[0].size == info.size && ours.size == info.size, "\(path)")
    let frame = info.reduction.hasPrefix("frame ") ? Int(info.reduction.dropFirst(6))! - 1 : 0
    let expected: [UInt8]
    switch Self.reference(for: path) {
    case .pillow:
      expected = try #require(
        try ReferenceDecoder.png(path, frame: frame), "\(path): Pillow cannot decode it")
    case .png(let name):
      expected = [UInt8](
        try Data(
          contentsOf: URL(fileURLWithPath: path).deletingLastPathComponent().appendingPathComponent(name)))
    case .djxl:
      #expect(try ReferenceDecoder.png(path) == nil, "\(path): Pillow decodes it now; compare with it")
      expected = try #require(try ReferenceDecoder.png(path, djxl: true), "\(path): djxl cannot decode it")
    case .hdrGradient:
      // Grey, growing from near black on the left to white on the right, never darker to the right.
      let row = ours.height / 2
      let values = (0..<ours.width).map { Int(ours.pixels[(row * ours.width + $0) * ours.channels]) }
      #expect(zip(values, values.dropFirst()).allSatisfy { $0 <= $1 }, "\(path): not monotonic")
      #expect(values.first! < 20 && values.last! >= 250, "\(path): \(values.first!) to \(values.last!)")
      #expect(info.reduction.contains("pq tone-mapped"), "\(info.reduction)")
      return
    }
    let reference = try decodeAny(expected)
    let similarity = ssim(ours, reference)
    #expect(similarity >= 0.95, "\(path): SSIM \(similarity) to the other decoder's frame \(frame)")
  }
}
