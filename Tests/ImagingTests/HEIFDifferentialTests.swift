import CLibHeif
import Foundation
import TestSupport
import Testing
import ThumbCore

@testable import Imaging

/// thumbd's HEIF decodes held to libheif's own: every file of the generated matrix (HEIFMatrix) and every
/// HEIF of the corpus is decoded through thumbd's HEVC route (or wherever HEIFSource sends it) and through
/// libheif with its libde265 plugin, the decoder Debian builds it with, and the two upright RGB pictures
/// are compared pixel by pixel.
@Suite(.enabled(if: HEIFMatrix.isAvailable, Comment(rawValue: HEIFMatrix.skipReason)))
struct HEIFDifferentialTests {
  /// The largest mean absolute difference per channel allowed between thumbd's decode and libheif's.
  static let tolerance = 1.0

  @Test(arguments: HEIFMatrix.names)
  func theRouteDrawsWhatLibheifDraws(name: String) throws {
    let bytes = try HEIFMatrix.bytes(name)
    // thumbd's own route follows HEIF where libheif 1.15 does not (a grid's nclx box); its libheif
    // route is libheif, and is held to libheif's own plugin on the same file.
    let standard = try HEIFReference.decode(try HEIFMatrix.referenceBytes(name))
    let plain = try HEIFReference.decode(bytes)
    for tiles in [true, false] {
      let reference = tiles ? standard : plain
      let (picture, source) = try HEIFReference.thumbdDecode(bytes, tiles: tiles)
      if tiles {
        // The route takes every 8-bit colour picture that is not cropped or mirrored; the rest is libheif's.
        let libheifs = ["10bit", "chroma-400", "alpha", "clap", "imir"]
        let own = !libheifs.contains { name.contains($0) }
        #expect(source.usesTiles == own, "\(name): \(source.libheifReason ?? "own route")")
      }
      #expect(
        picture.size == reference.size, "\(name) (tiles: \(tiles)): \(picture.size) against \(reference.size)"
      )
      let difference = HEIFReference.difference(picture, reference)
      #expect(
        difference <= Self.tolerance,
        "\(name) (tiles: \(tiles), route \(source.usesTiles ? "own" : "libheif")): mean difference \(difference)"
      )
    }
  }
}

/// The same comparison on every HEIF and AVIF of the shared corpus (real phones' and libheif's files).
@Suite(.enabled(if: SharedCorpus.isAvailable, Comment(rawValue: SharedCorpus.skipReason)))
struct HEIFCorpusDifferentialTests {
  @Test(arguments: [
    "phone/drewnoakes__IMG_2927.HEIC", "phone/drewnoakes__Issue_487.heic", "heic/IMG_5195.HEIC",
    "heic/example.heic", "heic/example.avif",
  ])
  func everyCorpusHEIFDrawsWhatLibheifDraws(path: String) throws {
    let bytes = try SharedCorpus.bytes(path)
    let avif = path.hasSuffix(".avif")
    let reference = try HEIFReference.decode(bytes, decoder: avif ? nil : "libde265")
    for tiles in [true, false] {
      let (picture, _) = try HEIFReference.thumbdDecode(bytes, tiles: tiles)
      let difference = HEIFReference.difference(picture, reference)
      #expect(difference <= HEIFDifferentialTests.tolerance, "\(path) (tiles: \(tiles)): \(difference)")
    }
  }
}

/// libheif's own decode of a HEIF file, and thumbd's, as upright RGB(A) pictures.
enum HEIFReference {
  /// libheif with its libde265 plugin (or `decoder`; nil: libheif's choice): transforms applied, colour
  /// converted by libheif, 8 bits.
  static func decode(_ bytes: [UInt8], decoder: String? = "libde265") throws -> PixelBuffer {
    _ = HEIFSource.initialised
    let context = try #require(heif_context_alloc())
    defer { heif_context_free(context) }
    var failure = bytes.withUnsafeBytes {
      heif_context_read_from_memory(context, $0.baseAddress, $0.count, nil)
    }
    try #require(failure.code == heif_error_Ok, "\(String(cString: failure.message))")
    var handle: OpaquePointer?
    failure = heif_context_get_primary_image_handle(context, &handle)
    let primary = try #require(handle)
    defer { heif_image_handle_release(primary) }
    let options = try #require(heif_decoding_options_alloc())
    defer { heif_decoding_options_free(options) }
    options.pointee.convert_hdr_to_8bit = 1
    let alpha = heif_image_handle_has_alpha_channel(primary) != 0
    var image: OpaquePointer?
    func decode() -> heif_error {
      heif_decode_image(
        primary, &image, heif_colorspace_RGB,
        alpha ? heif_chroma_interleaved_RGBA : heif_chroma_interleaved_RGB, options)
    }
    if let decoder {
      failure = decoder.withCString { id in
        options.pointee.decoder_id = id
        return decode()
      }
    } else {
      failure = decode()
    }
    try #require(
      failure.code == heif_error_Ok, "\(decoder ?? "libheif"): \(String(cString: failure.message))")
    let decoded = try #require(image)
    defer { heif_image_release(decoded) }
    var stride: Int32 = 0
    let base = try #require(heif_image_get_plane_readonly(decoded, heif_channel_interleaved, &stride))
    let width = Int(heif_image_get_width(decoded, heif_channel_interleaved))
    let height = Int(heif_image_get_height(decoded, heif_channel_interleaved))
    let channels = alpha ? 4 : 3
    var out = PixelBuffer(width: width, height: height, channels: channels)
    for y in 0..<height {
      for x in 0..<width * channels {
        out.pixels[y * width * channels + x] = base[y * Int(stride) + x]
      }
    }
    return out
  }

  /// thumbd's decode at full size, turned upright. Subsampled chroma is repeated (nearest neighbour),
  /// as libheif 1.15 upsamples it, so that the comparison sees the decoded samples and how they are
  /// read (range, matrix, crop, turns), not the two upsampling filters.
  static func thumbdDecode(_ bytes: [UInt8], tiles: Bool) throws -> (PixelBuffer, HEIFSource) {
    let source = try HEIFSource(bytes, format: .heif, maxPixels: 100_000_000, tiles: tiles)
    let image = try source.decode(requiredScale: 1, margin: 1).image
    var picture: PixelBuffer
    if image.model == .yCbCr {
      let (w, h) = (image.size.width, image.size.height)
      picture = PixelBuffer(width: w, height: h, channels: 3)
      let conversion = image.yCbCrCoding.fixedPoint
      let (y, cb, cr) = (image.planes[0], image.planes[1], image.planes[2])
      let sub = image.subsampling[1]
      for row in 0..<h {
        for x in 0..<w {
          let c = (row / sub.vertical) * cb.stride + x / sub.horizontal
          let rgb = conversion.rgb(
            y: y.withUnsafeBufferPointer { $0[row * y.stride + x] }, cb: cb.withUnsafeBufferPointer { $0[c] },
            cr: cr.withUnsafeBufferPointer { $0[c] })
          picture.pixels[(row * w + x) * 3] = rgb.0
          picture.pixels[(row * w + x) * 3 + 1] = rgb.1
          picture.pixels[(row * w + x) * 3 + 2] = rgb.2
        }
      }
    } else {
      picture = image.interleaved()
    }
    picture = picture.oriented(source.header.orientation)
    if picture.channels == 1 {
      var rgb = PixelBuffer(width: picture.width, height: picture.height, channels: 3)
      for i in 0..<picture.pixels.count {
        for c in 0..<3 { rgb.pixels[i * 3 + c] = picture.pixels[i] }
      }
      picture = rgb
    }
    return (picture, source)
  }

  /// Mean absolute difference per channel; colour weighted by alpha where there is alpha (a fully
  /// transparent pixel's colour is not seen).
  static func difference(_ a: PixelBuffer, _ b: PixelBuffer) -> Double {
    guard a.width == b.width, a.height == b.height, a.channels == b.channels else { return .infinity }
    guard a.channels == 4 else { return meanDifference(a, b) }
    var total = 0.0
    for p in 0..<(a.width * a.height) {
      let (alphaA, alphaB) = (Double(a.pixels[p * 4 + 3]), Double(b.pixels[p * 4 + 3]))
      for c in 0..<3 {
        total += abs(Double(a.pixels[p * 4 + c]) * alphaA - Double(b.pixels[p * 4 + c]) * alphaB) / 255
      }
      total += abs(alphaA - alphaB)
    }
    return total / Double(a.width * a.height * 4)
  }
}
