import Foundation
import Testing

@testable import ThumbCore

@Suite struct ImageFormatTests {
  @Test func sniffsByMagicBytes() {
    #expect(ImageFormat.sniff([0xFF, 0xD8, 0xFF, 0xE0]) == .jpeg)
    #expect(ImageFormat.sniff([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) == .png)
    #expect(ImageFormat.sniff(Array("RIFF\0\0\0\0WEBPVP8 ".utf8)) == .webp)
    #expect(ImageFormat.sniff([0, 0, 0, 0x18] + Array("ftypheic\0\0\0\0mif1heic".utf8)) == .heif)
    #expect(ImageFormat.sniff([0, 0, 0, 0x18] + Array("ftypavif\0\0\0\0avifmif1".utf8)) == .avif)
    // A vendor major brand with HEIF among the compatible ones (libheif's fuzz corpus has such files).
    #expect(ImageFormat.sniff([0, 0, 0, 0x18] + Array("ftyp    \0\0\0\0    mif1".utf8)) == .heif)
    #expect(ImageFormat.sniff([0, 0, 0, 0x18] + Array("ftypisom\0\0\0\0isommp41".utf8)) == .video)  // MP4
    #expect(ImageFormat.sniff([0, 0, 0, 0x18] + Array("ftypheic".utf8)) == nil)  // the box is cut short
    #expect(ImageFormat.sniff(Array("<html>".utf8)) == nil)
    #expect(ImageFormat.sniff([]) == nil)
  }

  /// The format table is the one list of formats: each appears once, and the sniffer knows each by what
  /// its entry says (its signatures, padded to the bytes it needs; its brands, alone in an `ftyp` box),
  /// and the URL rule by its extensions.
  @Test func theSnifferFollowsTheFormatTable() {
    #expect(
      MediaFormats.table.map(\.format.rawValue).sorted() == ImageFormat.allCases.map(\.rawValue).sorted())
    for traits in MediaFormats.table {
      #expect(!traits.signatures.isEmpty || !traits.brands.isEmpty, "\(traits.format) cannot be told")
      for signature in traits.signatures {
        var bytes = [UInt8](repeating: 0x20, count: max(traits.minimumBytes, 64))
        for run in signature.runs {
          bytes.replaceSubrange(run.offset..<(run.offset + run.bytes.count), with: run.bytes)
        }
        #expect(ImageFormat.sniff(bytes) == traits.format, "\(traits.format): \(signature.runs)")
        if traits.minimumBytes > 0 {
          #expect(ImageFormat.sniff(Array(bytes.prefix(traits.minimumBytes - 1))) == nil)
        }
      }
      for brand in traits.brands {
        let box = [0, 0, 0, 20] + Array("ftyp\(brand)".utf8) + [0, 0, 0, 0] + Array(brand.utf8)
        #expect(ImageFormat.sniff(box) == traits.format, "\(traits.format): \(brand)")
        if !traits.brandsDecideAlone {
          // An image brand anywhere in the list wins over this one.
          let image = MediaFormats.table.first { $0.brandsDecideAlone }!
          let both =
            [0, 0, 0, 24] + Array("ftyp\(brand)".utf8) + [0, 0, 0, 0] + Array(brand.utf8)
            + Array(image.brands.sorted()[0].utf8)
          #expect(ImageFormat.sniff(both) == image.format)
        }
      }
      for ext in traits.rangeExtensions {
        #expect(SourceURL.readsByRanges("https://example.com/a/clip.\(ext.uppercased())?x=1"))
        #expect(traits.readsByRanges)
      }
      #expect(traits.format.decodes == traits.decodes && traits.format.animates == traits.animates)
    }
    #expect(!SourceURL.readsByRanges("https://example.com/photo.jpg"))
  }
}
