import CWebP
import ThumbCore

/// An animated WebP through libwebp's WebPAnimEncoder: frames are given whole (the canvas as shown) with
/// their durations, and the encoder keeps only what changed from one to the next (sub-frame rectangles,
/// blending and disposal of its choosing). Owns the encoder and deletes it once, in deinit.
///
/// What it holds (MemoryCostModel counts it): a few canvases of the output's size (the previous frame,
/// the current one, candidate sub-frames) and every frame encoded so far, until `finish` assembles them.
final class AnimatedWebPEncoder {
  private let encoder: OpaquePointer
  private var config = WebPConfig()
  let size: PixelSize
  /// Where the next frame starts, in milliseconds from the first.
  private(set) var elapsed = 0
  private(set) var frames = 0

  /// `loopCount`: times the animation plays, 0 for ever.
  init(size: PixelSize, quality: Int, loopCount: Int) throws(JobError) {
    self.size = size
    var options = WebPAnimEncoderOptions()
    guard WebPAnimEncoderOptionsInit(&options) != 0, WebPConfigInit(&config) != 0 else {
      throw JobError(.internalError, "libwebp mux version mismatch")
    }
    options.anim_params.loop_count = Int32(clamping: loopCount)
    // Lossy throughout, as a still WebP variant is; "mixed" would try lossless on every frame too.
    options.allow_mixed = 0
    config.quality = Float(quality)
    config.method = 4
    guard WebPValidateConfig(&config) != 0,
      let encoder = WebPAnimEncoderNew(Int32(size.width), Int32(size.height), &options)
    else { throw JobError(.internalError, "the WebP animation encoder could not be made for \(size)") }
    self.encoder = encoder
  }

  deinit { WebPAnimEncoderDelete(encoder) }

  /// One frame, shown for `duration` milliseconds: RGB, or RGBA with straight alpha, of `size`.
  func add(_ frame: PixelBuffer, duration: Int) throws(JobError) {
    precondition(frame.width == size.width && frame.height == size.height)
    precondition(frame.channels == 3 || frame.channels == 4)
    var picture = WebPPicture()
    guard WebPPictureInit(&picture) != 0 else { throw JobError(.internalError, "libwebp version mismatch") }
    defer { WebPPictureFree(&picture) }
    picture.use_argb = 1
    picture.width = Int32(size.width)
    picture.height = Int32(size.height)
    let imported = frame.pixels.withUnsafeBufferPointer { pixels in
      frame.channels == 4
        ? WebPPictureImportRGBA(&picture, pixels.baseAddress, Int32(frame.rowBytes))
        : WebPPictureImportRGB(&picture, pixels.baseAddress, Int32(frame.rowBytes))
    }
    guard imported != 0 else { throw JobError(.tooLarge, "WebP animation: out of memory for a frame") }
    guard WebPAnimEncoderAdd(encoder, &picture, Int32(clamping: elapsed), &config) != 0 else {
      throw JobError(.internalError, "WebP animation: frame \(frames + 1) could not be encoded")
    }
    elapsed += duration
    frames += 1
  }

  /// The file: every frame given, the last shown for its duration.
  func finish() throws(JobError) -> [UInt8] {
    guard frames > 0, WebPAnimEncoderAdd(encoder, nil, Int32(clamping: elapsed), nil) != 0 else {
      throw JobError(.internalError, "WebP animation: no frame to assemble")
    }
    var data = WebPData()
    guard WebPAnimEncoderAssemble(encoder, &data) != 0, let bytes = data.bytes else {
      WebPDataClear(&data)
      throw JobError(.internalError, "WebP animation could not be assembled")
    }
    defer { WebPDataClear(&data) }
    return Array(UnsafeBufferPointer(start: bytes, count: data.size))
  }
}
