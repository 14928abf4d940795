import CLibHeif
import ThumbCore

/// HEIF images through libheif. AVIF (the AV1 encoder, libaom in Debian's libheif) is an output format:
/// 8-bit YCbCr 4:2:0, tagged sRGB with an `nclx` colour box (BT.709 primaries, sRGB transfer, BT.601
/// matrix, full range), alpha kept when the image has it, one encoder thread (a worker runs a job per
/// core already). No EXIF, XMP or ICC is written: libheif adds only what it is given.
enum HEIFEncoder {
  static func avif(_ image: PixelBuffer, quality: Int, speed: Int) throws(JobError) -> [UInt8] {
    try encode(image, quality: quality, codec: .av1(speed: speed))
  }

  /// The coding of the image item. HEVC (libheif's x265) is not an output format: tests make HEIC
  /// originals with it.
  enum Codec {
    case av1(speed: Int)
    case hevc
  }

  static func encode(_ image: PixelBuffer, quality: Int, codec: Codec) throws(JobError) -> [UInt8] {
    var pixels = image
    if pixels.channels == 1 { pixels = pixels.expandedGray() }
    precondition(pixels.channels == 3 || pixels.channels == 4)
    _ = HEIFSource.initialised

    guard let context = heif_context_alloc() else {
      throw JobError(.internalError, "HEIF encoder: out of memory")
    }
    defer { heif_context_free(context) }
    var encoder: OpaquePointer?
    let compression: heif_compression_format
    switch codec {
    case .av1: compression = heif_compression_AV1
    case .hevc: compression = heif_compression_HEVC
    }
    try check(heif_context_get_encoder_for_format(context, compression, &encoder), "no encoder")
    guard let encoder else { throw JobError(.internalError, "HEIF encoder: none for the format") }
    defer { heif_encoder_release(encoder) }
    try check(heif_encoder_set_lossy_quality(encoder, Int32(quality)), "quality")
    try check(heif_encoder_set_parameter_string(encoder, "chroma", "420"), "chroma")
    if case .av1(let speed) = codec {
      try check(heif_encoder_set_parameter_integer(encoder, "speed", Int32(speed)), "speed")
      try check(heif_encoder_set_parameter_integer(encoder, "threads", 1), "threads")
    }

    let input = try heifImage(from: pixels)
    defer { heif_image_release(input) }

    guard let nclx = heif_nclx_color_profile_alloc() else {
      throw JobError(.internalError, "HEIF encoder: out of memory")
    }
    defer { heif_nclx_color_profile_free(nclx) }
    nclx.pointee.color_primaries = heif_color_primaries_ITU_R_BT_709_5
    nclx.pointee.transfer_characteristics = heif_transfer_characteristic_IEC_61966_2_1
    nclx.pointee.matrix_coefficients = heif_matrix_coefficients_ITU_R_BT_601_6
    nclx.pointee.full_range_flag = 1
    guard let options = heif_encoding_options_alloc() else {
      throw JobError(.internalError, "HEIF encoder: out of memory")
    }
    defer { heif_encoding_options_free(options) }
    options.pointee.output_nclx_profile = nclx
    options.pointee.save_alpha_channel = 1

    try check(heif_context_encode_image(context, input, encoder, options, nil), "encode")
    let sink = ByteSink()
    var writer = heif_writer(
      writer_api_version: 1,
      write: { _, data, size, userdata in
        let sink = Unmanaged<ByteSink>.fromOpaque(userdata!).takeUnretainedValue()
        if let data, size > 0 {
          sink.bytes.append(contentsOf: UnsafeRawBufferPointer(start: data, count: size))
        }
        return heif_error(code: heif_error_Ok, subcode: heif_suberror_Unspecified, message: HEIFEncoder.ok)
      })
    try check(heif_context_write(context, &writer, Unmanaged.passUnretained(sink).toOpaque()), "write")
    return sink.bytes
  }

  /// The picture libheif encodes from: interleaved RGB or RGBA, rows copied in.
  private static func heifImage(from pixels: PixelBuffer) throws(JobError) -> OpaquePointer {
    var image: OpaquePointer?
    let chroma = pixels.channels == 4 ? heif_chroma_interleaved_RGBA : heif_chroma_interleaved_RGB
    try check(
      heif_image_create(Int32(pixels.width), Int32(pixels.height), heif_colorspace_RGB, chroma, &image),
      "image")
    guard let image else { throw JobError(.internalError, "HEIF encoder: out of memory") }
    do {
      try check(
        heif_image_add_plane(image, heif_channel_interleaved, Int32(pixels.width), Int32(pixels.height), 8),
        "plane")
    } catch {
      heif_image_release(image)
      throw error
    }
    var stride: Int32 = 0
    let plane = heif_image_get_plane(image, heif_channel_interleaved, &stride)!
    let rowBytes = pixels.rowBytes
    pixels.pixels.withUnsafeBufferPointer { src in
      for y in 0..<pixels.height {
        (plane + y * Int(stride)).update(from: src.baseAddress! + y * rowBytes, count: rowBytes)
      }
    }
    return image
  }

  private static func check(_ error: heif_error, _ step: String) throws(JobError) {
    guard error.code != heif_error_Ok else { return }
    let message = error.message.map { String(cString: $0) } ?? "code \(error.code.rawValue)"
    throw JobError(.internalError, "HEIF encode failed (\(step)): \(message)")
  }

  /// The message of the `heif_error` the writer returns: libheif reads it, so it must outlive the call.
  nonisolated(unsafe) private static let ok: UnsafePointer<CChar> = UnsafeRawPointer(
    ("" as StaticString).utf8Start
  )
  .assumingMemoryBound(to: CChar.self)

  private final class ByteSink {
    var bytes: [UInt8] = []
  }
}
