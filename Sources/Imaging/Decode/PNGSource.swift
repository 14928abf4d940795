import CSpng
import ThumbCore

/// PNG through libspng: every colour type and bit depth (16-bit scaled to 8, palettes expanded, tRNS
/// turned into alpha), its ICC profile (iCCP) and EXIF orientation (eXIf). libspng returns errors; it
/// never longjmps.
final class PNGSource: SourceDecoder {
  /// Ancillary chunks (text, ICC, EXIF) may hold this much in all: a few MB of zTXt is not a photo.
  static let chunkLimit = 16 << 20

  let header: SourceHeader
  private let file: OwnedBytes
  private let context: OpaquePointer
  private let interlaced: Bool

  init(_ data: [UInt8]) throws(JobError) {
    file = OwnedBytes(data)
    guard let context = spng_ctx_new(0) else { throw JobError(.internalError, "spng_ctx_new failed") }
    self.context = context
    // Ancillary chunks with bad CRCs are dropped (as browsers do), critical ones are an error.
    spng_set_crc_action(context, Int32(SPNG_CRC_ERROR.rawValue), Int32(SPNG_CRC_DISCARD.rawValue))
    spng_set_chunk_limits(context, Self.chunkLimit, Self.chunkLimit)
    spng_set_png_buffer(context, file.pointer, file.count)
    var ihdr = spng_ihdr()
    let status = spng_get_ihdr(context, &ihdr)
    guard status == 0 else {
      spng_ctx_free(context)
      throw Self.jobError(status, what: "PNG header")
    }
    interlaced = ihdr.interlace_method != 0
    var trns = spng_trns()
    let hasAlpha = ihdr.color_type == 4 || ihdr.color_type == 6 || spng_get_trns(context, &trns) == 0
    var orientation = Orientation.up
    var exif = spng_exif()
    if spng_get_exif(context, &exif) == 0, let bytes = exif.data, exif.length > 0 {
      orientation =
        ExifReader.tiffOrientation(UnsafeRawBufferPointer(start: bytes, count: exif.length)) ?? .up
    }
    var color = ColorDescription.unspecified
    var iccp = spng_iccp()
    if spng_get_iccp(context, &iccp) == 0, let profile = iccp.profile, iccp.profile_len > 0 {
      color = .icc(Array(UnsafeRawBufferPointer(start: profile, count: iccp.profile_len)))
    }
    header = SourceHeader(
      format: .png, storedSize: PixelSize(width: Int(ihdr.width), height: Int(ihdr.height)),
      orientation: orientation, hasAlpha: hasAlpha, color: color)
  }

  deinit { spng_ctx_free(context) }

  /// PNG has no reduced decode: always full size. Rows are decoded one at a time into the planes, so the
  /// interleaved image never exists whole (interlaced files, whose rows come pass by pass, excepted).
  func decode(requiredScale: Double, margin: Double) throws(JobError) -> DecodedSource {
    let channels = header.hasAlpha ? 4 : 3
    let format = Int32((header.hasAlpha ? SPNG_FMT_RGBA8 : SPNG_FMT_RGB8).rawValue)
    let size = header.storedSize
    let rowBytes = size.width * channels
    if interlaced {
      var length = 0
      var status = spng_decoded_image_size(context, format, &length)
      guard status == 0 else { throw Self.jobError(status, what: "PNG") }
      var pixels = [UInt8](repeating: 0, count: length)
      status = pixels.withUnsafeMutableBytes {
        spng_decode_image(context, $0.baseAddress, length, format, Int32(SPNG_DECODE_TRNS.rawValue))
      }
      guard status == 0 else { throw Self.jobError(status, what: "PNG data") }
      let image = pixels.withUnsafeBufferPointer {
        PlanarImage(
          interleaved: $0.baseAddress!, size: size, stride: rowBytes, model: header.hasAlpha ? .rgba : .rgb)
      }
      return DecodedSource(image: image, reduction: "1/1")
    }
    var status = spng_decode_image(
      context, nil, 0, format, Int32(SPNG_DECODE_TRNS.rawValue | SPNG_DECODE_PROGRESSIVE.rawValue))
    guard status == 0 else { throw Self.jobError(status, what: "PNG data") }
    var row = [UInt8](repeating: 0, count: rowBytes)
    var image = PlanarImage(
      model: header.hasAlpha ? .rgba : .rgb,
      planes: (0..<channels).map { _ in Plane(width: size.width, height: size.height, zeroed: false) })
    try withMutablePlanePointers(&image.planes) { (dst) throws(JobError) in
      for y in 0..<size.height {
        status = row.withUnsafeMutableBytes { spng_decode_row(context, $0.baseAddress, rowBytes) }
        // SPNG_EOI comes with the last row.
        guard status == 0 || (status == Int32(SPNG_EOI.rawValue) && y == size.height - 1) else {
          throw Self.jobError(status, what: "PNG data")
        }
        row.withUnsafeBufferPointer { src in
          PlanarImage.split(
            row: src.baseAddress!, width: size.width, into: dst, at: y * size.width,
            premultiplying: header.hasAlpha)
        }
      }
    }
    return DecodedSource(image: image, reduction: "1/1")
  }

  static func jobError(_ status: Int32, what: String) -> JobError {
    let message = String(cString: spng_strerror(status))
    return JobError(.corruptImage, "\(what): \(message)")
  }
}

extension PNGSource: FormatDecoder {
  static let formats: Set<ImageFormat> = [.png]

  static func open(
    _ original: OriginalBytes, format: ImageFormat, maxPixels: Int
  ) throws(JobError) -> PNGSource {
    try PNGSource(original.wholeFile(of: format))
  }
}
