import CWebP
import ThumbCore

/// libwebp's WebPAnimDecoder over a file's bytes: it composes each frame onto the canvas (offsets,
/// blending with the previous frame, disposal) as the WebP container specifies, into a canvas-sized
/// RGBA buffer of its own. Owns the decoder and deletes it once, in deinit.
///
/// What it holds (MemoryCostModel counts it): two canvas-sized RGBA buffers (the current canvas and the
/// previous one, disposed, for the next frame to blend with), a demuxer of its own that points into
/// `file` without copying it, and while a frame decodes, that frame's codec buffers (a lossless frame's
/// ARGB, at most the canvas). It cannot decode scaled: the canvas comes at full size.
final class WebPAnimation {
  private let decoder: OpaquePointer
  let canvas: PixelSize
  /// Kept alive while the decoder points into it.
  private let file: OwnedBytes

  init(_ file: OwnedBytes) throws(JobError) {
    self.file = file
    var options = WebPAnimDecoderOptions()
    guard WebPAnimDecoderOptionsInit(&options) != 0 else {
      throw JobError(.internalError, "libwebp demux version mismatch")
    }
    // Premultiplied, as the rest of thumbd keeps RGBA; one thread, as every decode here is one job's.
    options.color_mode = MODE_rgbA
    options.use_threads = 0
    var data = WebPData(bytes: file.pointer.assumingMemoryBound(to: UInt8.self), size: file.count)
    guard let decoder = WebPAnimDecoderNew(&data, &options) else {
      throw JobError(.corruptImage, "WebP animation could not be parsed")
    }
    self.decoder = decoder
    var info = WebPAnimInfo()
    guard WebPAnimDecoderGetInfo(decoder, &info) != 0 else {
      WebPAnimDecoderDelete(decoder)
      throw JobError(.corruptImage, "WebP animation has no canvas")
    }
    canvas = PixelSize(width: Int(info.canvas_width), height: Int(info.canvas_height))
  }

  deinit { WebPAnimDecoderDelete(decoder) }

  /// The first frame composed on the canvas (transparent where the frame does not reach: libwebp leaves
  /// the ANIM chunk's background colour to the viewer, and so does thumbd), as premultiplied RGBA rows
  /// of `canvas.width * 4` bytes, lent to `body` only: the buffer belongs to the decoder.
  func withFirstFrame<R>(_ body: (UnsafePointer<UInt8>) -> R) throws(JobError) -> R {
    var buffer: UnsafeMutablePointer<UInt8>?
    var timestamp: Int32 = 0
    guard WebPAnimDecoderGetNext(decoder, &buffer, &timestamp) != 0, let buffer else {
      throw JobError(.corruptImage, "WebP animation: the first frame is damaged or truncated")
    }
    return body(UnsafePointer(buffer))
  }

  /// Whether frames are left to give.
  var hasMoreFrames: Bool { WebPAnimDecoderHasMoreFrames(decoder) != 0 }

  /// The next frame composed on the canvas, and the time it ends (milliseconds from the start), lent to
  /// `body` as `withFirstFrame` lends it; nil when every frame has been given.
  func withNextFrame<R>(_ body: (UnsafePointer<UInt8>, Int) -> R) throws(JobError) -> R? {
    guard WebPAnimDecoderHasMoreFrames(decoder) != 0 else { return nil }
    var buffer: UnsafeMutablePointer<UInt8>?
    var timestamp: Int32 = 0
    guard WebPAnimDecoderGetNext(decoder, &buffer, &timestamp) != 0, let buffer else {
      throw JobError(.corruptImage, "WebP animation: a frame is damaged or truncated")
    }
    return body(UnsafePointer(buffer), Int(timestamp))
  }
}
