import CLCMS2
import CSpng
import CTurboJPEG
import CWebP
import Foundation
import Glibc
import Imaging
import ThumbCore

/// Writers for the test inputs no file in the repository provides: PNGs of every colour type, WebP,
/// CMYK JPEG, and JPEGs with an embedded ICC profile or EXIF orientation. Built with the C libraries
/// directly, not through thumbd's encoders, so a bug in those cannot hide a bug in the decoders.
enum TestImages {
  /// A PNG of `colorType` (0 grey, 2 RGB, 3 palette, 4 grey+alpha, 6 RGBA) and `bitDepth`, from rows of
  /// samples as PNG lays them out, without filter bytes (16-bit samples in host order, as libspng's SPNG_FMT_PNG takes them).
  static func png(
    width: Int, height: Int, colorType: UInt8, bitDepth: UInt8, scanlines: [UInt8],
    palette: [(UInt8, UInt8, UInt8)] = [], transparency: [UInt8] = [], exif: [UInt8]? = nil
  ) -> [UInt8] {
    let ctx = spng_ctx_new(Int32(SPNG_CTX_ENCODER.rawValue))!
    defer { spng_ctx_free(ctx) }
    spng_set_option(ctx, SPNG_ENCODE_TO_BUFFER, 1)
    var ihdr = spng_ihdr()
    ihdr.width = UInt32(width)
    ihdr.height = UInt32(height)
    ihdr.bit_depth = bitDepth
    ihdr.color_type = colorType
    precondition(spng_set_ihdr(ctx, &ihdr) == 0)
    if !palette.isEmpty {
      var plte = spng_plte()
      plte.n_entries = UInt32(palette.count)
      withUnsafeMutableBytes(of: &plte.entries) { raw in
        let entries = raw.bindMemory(to: spng_plte_entry.self)
        for (i, c) in palette.enumerated() {
          entries[i] = spng_plte_entry(red: c.0, green: c.1, blue: c.2, alpha: 255)
        }
      }
      precondition(spng_set_plte(ctx, &plte) == 0)
    }
    if !transparency.isEmpty {
      var trns = spng_trns()
      trns.n_type3_entries = UInt32(transparency.count)
      withUnsafeMutableBytes(of: &trns.type3_alpha) { raw in
        for (i, a) in transparency.enumerated() { raw[i] = a }
      }
      precondition(spng_set_trns(ctx, &trns) == 0)
    }
    var exifBytes = exif.map { $0.map { CChar(bitPattern: $0) } } ?? []
    if exif != nil {
      exifBytes.withUnsafeMutableBufferPointer { p in
        var chunk = spng_exif(length: p.count, data: p.baseAddress)
        precondition(spng_set_exif(ctx, &chunk) == 0)
      }
    }
    let status = scanlines.withUnsafeBytes {
      spng_encode_image(
        ctx, $0.baseAddress, $0.count, Int32(SPNG_FMT_PNG.rawValue), Int32(SPNG_ENCODE_FINALIZE.rawValue))
    }
    precondition(status == 0, String(cString: spng_strerror(status)))
    var length = 0
    var error: Int32 = 0
    let buffer = spng_get_png_buffer(ctx, &length, &error)!
    defer { free(buffer) }
    return Array(UnsafeRawBufferPointer(start: buffer, count: length))
  }

  /// Lossless WebP from RGBA (alpha kept), or lossy from RGB.
  static func webp(_ image: PixelBuffer, lossless: Bool) -> [UInt8] {
    var output: UnsafeMutablePointer<UInt8>?
    let size = image.pixels.withUnsafeBufferPointer { p in
      lossless
        ? WebPEncodeLosslessRGBA(
          p.baseAddress, Int32(image.width), Int32(image.height), Int32(image.rowBytes), &output)
        : WebPEncodeRGB(
          p.baseAddress, Int32(image.width), Int32(image.height), Int32(image.rowBytes), 90, &output)
    }
    defer { WebPFree(output) }
    return Array(UnsafeBufferPointer(start: output, count: size))
  }

  /// A four-component (YCCK, Adobe) JPEG from CMYK pixels, as Photoshop writes them.
  static func cmykJPEG(width: Int, height: Int, cmyk: (UInt8, UInt8, UInt8, UInt8)) -> [UInt8] {
    let pixels = (0..<(width * height)).flatMap { _ in [cmyk.0, cmyk.1, cmyk.2, cmyk.3] }
    let handle = tjInitCompress()!
    defer { tjDestroy(handle) }
    var out: UnsafeMutablePointer<UInt8>?
    var length: UInt = 0
    let status = pixels.withUnsafeBufferPointer {
      tjCompress2(
        handle, $0.baseAddress, Int32(width), 0, Int32(height), Int32(TJPF_CMYK.rawValue), &out, &length,
        Int32(TJSAMP_444.rawValue), 95, 0)
    }
    precondition(status == 0)
    defer { tjFree(out) }
    return Array(UnsafeBufferPointer(start: out, count: Int(length)))
  }

  /// An ICC profile for Display P3 (P3 primaries, D65, the sRGB curve), as iPhones embed.
  static func displayP3Profile() -> [UInt8] {
    var white = cmsCIExyY(x: 0.3127, y: 0.3290, Y: 1)
    var primaries = cmsCIExyYTRIPLE(
      Red: cmsCIExyY(x: 0.680, y: 0.320, Y: 1), Green: cmsCIExyY(x: 0.265, y: 0.690, Y: 1),
      Blue: cmsCIExyY(x: 0.150, y: 0.060, Y: 1))
    var parameters: [Double] = [2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045]
    let curve = cmsBuildParametricToneCurve(nil, 4, &parameters)
    defer { cmsFreeToneCurve(curve) }
    var curves: [OpaquePointer?] = [curve, curve, curve]
    let profile = cmsCreateRGBProfile(&white, &primaries, &curves)!
    defer { cmsCloseProfile(profile) }
    var size: cmsUInt32Number = 0
    cmsSaveProfileToMem(profile, nil, &size)
    var bytes = [UInt8](repeating: 0, count: Int(size))
    cmsSaveProfileToMem(profile, &bytes, &size)
    return bytes
  }

  /// `jpeg` with `segments` inserted right after SOI.
  static func inserting(_ segments: [[UInt8]], into jpeg: [UInt8]) -> [UInt8] {
    Array(jpeg[0..<2]) + segments.joined() + Array(jpeg[2...])
  }

  static func segment(_ marker: UInt8, _ payload: [UInt8]) -> [UInt8] {
    [0xFF, marker, UInt8((payload.count + 2) >> 8), UInt8((payload.count + 2) & 255)] + payload
  }

  static func iccSegment(_ profile: [UInt8]) -> [UInt8] {
    segment(0xE2, Array("ICC_PROFILE".utf8) + [0, 1, 1] + profile)
  }

  /// A big-endian TIFF block holding only IFD0's Orientation.
  static func tiffOrientation(_ value: UInt8) -> [UInt8] {
    [0x4D, 0x4D, 0, 42, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, value, 0, 0, 0, 0, 0, 0]
  }

  /// A JPEG whose pixels are `upright` stored turned or mirrored, with the EXIF orientation that turns
  /// them upright again: it shows as `upright`.
  static func orientedJPEG(_ upright: PixelBuffer, _ orientation: Orientation, quality: Int) throws -> [UInt8]
  {
    let storedSize = orientation.uprightSize(of: upright.size)
    var stored = PixelBuffer(width: storedSize.width, height: storedSize.height, channels: 3)
    for y in 0..<upright.height {
      for x in 0..<upright.width {
        let s = orientation.storedCoordinate(x: x, y: y, w: storedSize.width, h: storedSize.height)
        for c in 0..<3 {
          stored.pixels[(s.y * storedSize.width + s.x) * 3 + c] =
            upright.pixels[(y * upright.width + x) * 3 + c]
        }
      }
    }
    let exif = segment(0xE1, Array("Exif".utf8) + [0, 0] + tiffOrientation(UInt8(orientation.rawValue)))
    return inserting([exif], into: try JPEG.encode(stored, quality: quality))
  }

  static func solid(width: Int, height: Int, _ rgb: (UInt8, UInt8, UInt8)) -> PixelBuffer {
    var image = PixelBuffer(width: width, height: height, channels: 3)
    for i in 0..<(width * height) {
      image.pixels[i * 3] = rgb.0
      image.pixels[i * 3 + 1] = rgb.1
      image.pixels[i * 3 + 2] = rgb.2
    }
    return image
  }
}

/// The mean of each channel of a decoded variant.
func meanColor(_ image: PixelBuffer) -> [Double] {
  var sums = [Double](repeating: 0, count: image.channels)
  for i in 0..<image.pixels.count { sums[i % image.channels] += Double(image.pixels[i]) }
  return sums.map { $0 / Double(image.width * image.height) }
}
