import Foundation
import TestSupport
import Testing
import ThumbCore

@testable import Imaging

/// HDR photos: the SDR thumbnail is the base image, in its own colours, never the gain map or another
/// auxiliary image, and carries none of the HDR metadata.
@Suite struct GainMapTests {
  let thumbnailer = Thumbnailer()

  /// The images an MPF segment (APP2 "MPF\0") lists: (offset, size) in the file, the first image's
  /// offset being 0. CIPA DC-007: an IFD whose tag 0xB002 holds 16-byte entries (attributes, size,
  /// offset from the MPF header, two dependent-image numbers), little or big endian.
  static func multiPictureImages(_ jpeg: [UInt8]) -> [(offset: Int, size: Int)] {
    var images: [(offset: Int, size: Int)] = []
    jpeg.withUnsafeBytes { file in
      JPEGSegments.forEach(file) { marker, payload in
        guard marker == 0xE2, payload.count > 8, payload.prefix(4).elementsEqual("MPF\0".utf8) else {
          return true
        }
        let tiff = file.baseAddress!.distance(to: payload.baseAddress!) + 4
        let little = jpeg[tiff] == 0x49
        func read(_ at: Int, _ bytes: Int) -> Int {
          (0..<bytes).reduce(0) { value, i in
            value | Int(jpeg[at + i]) << (8 * (little ? i : bytes - 1 - i))
          }
        }
        let ifd = tiff + read(tiff + 4, 4)
        for entry in 0..<read(ifd, 2) {
          let field = ifd + 2 + entry * 12
          guard read(field, 2) == 0xB002 else { continue }
          let entries = tiff + read(field + 8, 4)
          images = (0..<read(field + 4, 4) / 16).map { n in
            let offset = read(entries + n * 16 + 8, 4)
            return (offset: offset == 0 ? 0 : tiff + offset, size: read(entries + n * 16 + 4, 4))
          }
        }
        return false
      }
    }
    return images
  }

  /// A Pixel Ultra HDR JPEG: the primary image, then its gain map as a second JPEG the MPF segment
  /// points at, and hdrgm XMP. The thumbnails are those of the primary image alone, byte for byte.
  @Test(.enabled(if: SharedCorpus.isAvailable, Comment(rawValue: SharedCorpus.skipReason)))
  func anUltraHDRJPEGRendersItsBaseImage() throws {
    let file = try SharedCorpus.bytes("phone/MishaalRah__Ultra_HDR_Samples_Originals_01.jpg")
    let images = Self.multiPictureImages(file)
    try #require(images.count == 2, "the primary image and its gain map: \(images)")
    let gainMap = Array(file[images[1].offset..<images[1].offset + images[1].size])
    #expect(Array(gainMap.prefix(2)) == [0xFF, 0xD8])
    // The primary image runs up to the gain map: this file's MPF gives it 307 bytes fewer than that.
    let primary = Array(file.prefix(images[1].offset))
    let (info, variants) = try thumbnailer.render(file, variants: Profile.default.variants)
    let (_, alone) = try thumbnailer.render(primary, variants: Profile.default.variants)
    let same = variants.map(\.data) == alone.map(\.data)
    #expect(same, "the same thumbnails as the primary image alone")
    #expect(info.warnings.isEmpty)
    #expect(info.size == ImageProbe.pixelSize(primary, format: .jpeg).map { $0 })
    #expect(variants.allSatisfy { !carriesMetadata($0.data) })
    // The gain map is a smaller, greyscale-like picture: rendered, it would differ.
    let (mapInfo, _) = try thumbnailer.render(gainMap, variants: Profile.default.variants)
    #expect(mapInfo.size != info.size)
  }

  /// A picture with colour in it, and another one unlike it (what a gain map or depth map looks like:
  /// smooth greys).
  static func pictures() throws -> (primary: [UInt8], other: [UInt8]) {
    var colour = PixelBuffer(width: 960, height: 720, channels: 3)
    for y in 0..<720 {
      for x in 0..<960 {
        let i = (y * 960 + x) * 3
        colour.pixels[i] = UInt8(x * 255 / 960)
        colour.pixels[i + 1] = UInt8(255 - y * 255 / 720)
        colour.pixels[i + 2] = (x / 60 + y / 60) % 2 == 0 ? 200 : 40
      }
    }
    var grey = PixelBuffer(width: 480, height: 360, channels: 3)
    for i in 0..<grey.pixels.count { grey.pixels[i] = UInt8(255 - (i / 3 % 480) * 255 / 480) }
    return (
      try HEIFEncoder.encode(colour, quality: 80, codec: .hevc),
      try HEIFEncoder.encode(grey, quality: 80, codec: .hevc)
    )
  }

  static let hdrXMP = """
    <x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">\
    <rdf:Description xmlns:hdrgm="http://ns.adobe.com/hdr-gain-map/1.0/" hdrgm:Version="1.0" \
    hdrgm:GainMapMax="2.3" hdrgm:HDRCapacityMax="2.3"/></rdf:RDF></x:xmpmeta>
    """

  /// An iPhone HDR HEIC (a gain map as an auxiliary image), one with a depth map, and a Samsung-style one
  /// (gain-map XMP): on thumbd's own HEVC route and through libheif, the thumbnails are the primary
  /// image's alone, byte for byte, and carry no metadata.
  @Test(arguments: ["gain map", "depth map", "XMP"])
  func aHEICsAuxiliaryImagesAndHDRMetadataAreLeftOut(kind: String) throws {
    let (primaryFile, otherFile) = try Self.pictures()
    let primary = try #require(HEIFComposer.Coded(primaryFile))
    let other = try #require(HEIFComposer.Coded(otherFile))
    let file: [UInt8]
    switch kind {
    case "gain map":
      file = HEIFComposer.compose(primary: primary, auxiliary: (other, HEIFComposer.appleGainMap))
    case "depth map": file = HEIFComposer.compose(primary: primary, auxiliary: (other, HEIFComposer.depthMap))
    default: file = HEIFComposer.compose(primary: primary, xmp: Self.hdrXMP)
    }
    let alone = HEIFComposer.compose(primary: primary)
    let (info, variants) = try thumbnailer.render(file, variants: Profile.default.variants)
    let (_, expected) = try thumbnailer.render(alone, variants: Profile.default.variants)
    #expect(info.size == PixelSize(width: 960, height: 720) && !info.hasAlpha)
    let same = variants.map(\.data) == expected.map(\.data)
    #expect(same, "\(kind): the primary image's thumbnails")
    #expect(variants.allSatisfy { !carriesMetadata($0.data) })
    // libheif reads the file the same way: its primary image, no alpha from the auxiliary one.
    let viaLibheif = try HEIFSource(file, format: .heif, maxPixels: 100_000_000, tiles: false)
    #expect(!viaLibheif.usesTiles && !viaLibheif.header.hasAlpha)
    let decoded = try viaLibheif.decode(requiredScale: 1, margin: 1).image
    let reference = try HEIFSource(alone, format: .heif, maxPixels: 100_000_000, tiles: false)
      .decode(requiredScale: 1, margin: 1).image
    #expect(decoded.size == reference.size)
    let samePixels =
      decoded.planes.map { $0.withUnsafeBufferPointer(Array.init) }
      == reference.planes.map { $0.withUnsafeBufferPointer(Array.init) }
    #expect(samePixels, "\(kind): libheif decodes the primary image")
  }
}
