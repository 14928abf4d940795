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
}
