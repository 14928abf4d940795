import CSpng
import Glibc
import ThumbCore

/// PNG through libspng, 8-bit RGB, RGBA or grey, with no ancillary chunks: nothing of the original's
/// metadata is written.
enum PNGEncoder {
  static func encode(_ image: PixelBuffer) throws(JobError) -> [UInt8] {
    guard let context = spng_ctx_new(Int32(SPNG_CTX_ENCODER.rawValue)) else {
      throw JobError(.internalError, "spng_ctx_new failed")
    }
    defer { spng_ctx_free(context) }
    spng_set_option(context, SPNG_ENCODE_TO_BUFFER, 1)
    var ihdr = spng_ihdr()
    ihdr.width = UInt32(image.width)
    ihdr.height = UInt32(image.height)
    ihdr.bit_depth = 8
    ihdr.color_type = UInt8(
      (image.channels == 4
        ? SPNG_COLOR_TYPE_TRUECOLOR_ALPHA
        : image.channels == 3 ? SPNG_COLOR_TYPE_TRUECOLOR : SPNG_COLOR_TYPE_GRAYSCALE)
        .rawValue)
    var status = spng_set_ihdr(context, &ihdr)
    if status == 0 {
      status = image.pixels.withUnsafeBytes {
        spng_encode_image(
          context, $0.baseAddress, $0.count, Int32(SPNG_FMT_PNG.rawValue),
          Int32(SPNG_ENCODE_FINALIZE.rawValue))
      }
    }
    guard status == 0 else {
      throw JobError(.internalError, "PNG encode: \(String(cString: spng_strerror(status)))")
    }
    var length = 0
    var error: Int32 = 0
    guard let buffer = spng_get_png_buffer(context, &length, &error), error == 0 else {
      throw JobError(.internalError, "PNG encode: \(String(cString: spng_strerror(error)))")
    }
    defer { free(buffer) }
    return Array(UnsafeRawBufferPointer(start: buffer, count: length))
  }
}
