import CWebP
import ThumbCore

/// Lossy WebP through libwebp's simple API (method 4, its default balance of speed and size), with
/// alpha when the image has it. libwebp writes no EXIF, XMP or ICC chunk unless asked to.
enum WebPEncoder {
  static func encode(_ image: PixelBuffer, quality: Int) throws(JobError) -> [UInt8] {
    precondition(image.channels == 3 || image.channels == 4)
    var output: UnsafeMutablePointer<UInt8>?
    let length = image.pixels.withUnsafeBufferPointer { src in
      image.channels == 4
        ? WebPEncodeRGBA(
          src.baseAddress, Int32(image.width), Int32(image.height), Int32(image.rowBytes), Float(quality),
          &output)
        : WebPEncodeRGB(
          src.baseAddress, Int32(image.width), Int32(image.height), Int32(image.rowBytes), Float(quality),
          &output)
    }
    defer { if let output { WebPFree(output) } }
    guard length > 0, let output else { throw JobError(.internalError, "WebP encode failed") }
    return Array(UnsafeBufferPointer(start: output, count: length))
  }
}
