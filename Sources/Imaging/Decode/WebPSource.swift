import CWebP
import ThumbCore

/// WebP through libwebp: lossy and lossless, alpha (decoded premultiplied), libwebp's scaled decoding,
/// the ICCP and EXIF chunks through the demuxer. An animation gives its first frame, as shown: on the
/// canvas.
final class WebPSource: AnimatedSource {
  let header: SourceHeader
  private let file: OwnedBytes
  /// The bitstream to decode: the whole file, or an animation's first frame.
  private let bitstream: (UnsafePointer<UInt8>, Int)
  private let demuxer: OpaquePointer?
  /// The first frame's size, for an animation whose first frame does not cover the whole canvas
  /// (smaller, or offset): the frame alone would give a picture of the wrong size and aspect, so
  /// libwebp's animation decoder composes it onto the canvas (WebPAnimation), at full size. Nil
  /// otherwise: when the first frame covers the canvas, the composed canvas is exactly that frame, and
  /// its bitstream is decoded alone, scaled like a still.
  let composedFrame: PixelSize?
  var composesOnCanvas: Bool { composedFrame != nil }
  var animation: (any AnimatedSource)? { frameCount > 1 ? self : nil }

  func estimate(variants: [VariantSpec], margin: Double, fileBytes: Int) -> MemoryEstimate {
    // A plain lossy WebP ("VP8 " first) decodes row by row; lossless and extended files may not.
    let rowByRow =
      file.count > 16 && UnsafeRawBufferPointer(start: file.pointer + 12, count: 4).elementsEqual("VP8 ".utf8)
    let estimate = interleavedEstimate(
      variants: variants, margin: margin, fileBytes: fileBytes, wholeImageCodec: !rowByRow,
      composedFrame: composedFrame)
    guard frameCount > 1, composedFrame == nil else { return estimate }
    // A first frame that covers the canvas but shows nothing is passed over through the animation
    // decoder, at full size with its canvases: counted as if it were composed, when that costs more.
    let composed = interleavedEstimate(
      variants: variants, margin: margin, fileBytes: fileBytes, wholeImageCodec: true,
      composedFrame: header.storedSize)
    return composed.total > estimate.total ? composed : estimate
  }
  let frameCount: Int
  let loopCount: Int

  init(_ data: [UInt8]) throws(JobError) {
    file = OwnedBytes(data)
    let base = file.pointer.assumingMemoryBound(to: UInt8.self)
    var webpData = WebPData(bytes: base, size: file.count)
    demuxer = WebPDemux(&webpData)
    guard let demuxer else { throw JobError(.corruptImage, "WebP container could not be parsed") }
    var color = ColorDescription.unspecified
    var orientation = Orientation.up
    var chunk = WebPChunkIterator()
    if WebPDemuxGetChunk(demuxer, "ICCP", 1, &chunk) != 0, chunk.chunk.size > 0 {
      color = .icc(Array(UnsafeBufferPointer(start: chunk.chunk.bytes, count: chunk.chunk.size)))
    }
    WebPDemuxReleaseChunkIterator(&chunk)
    if WebPDemuxGetChunk(demuxer, "EXIF", 1, &chunk) != 0, chunk.chunk.size > 0 {
      var exif = UnsafeRawBufferPointer(start: chunk.chunk.bytes, count: chunk.chunk.size)
      // Some writers keep JPEG's "Exif\0\0" prefix in front of the TIFF header.
      if exif.count > 6, exif.prefix(6).elementsEqual(Array("Exif".utf8) + [0, 0]) {
        exif = UnsafeRawBufferPointer(rebasing: exif[6...])
      }
      orientation = ExifReader.tiffOrientation(exif) ?? .up
    }
    WebPDemuxReleaseChunkIterator(&chunk)
    let canvas = PixelSize(
      width: Int(WebPDemuxGetI(demuxer, WEBP_FF_CANVAS_WIDTH)),
      height: Int(WebPDemuxGetI(demuxer, WEBP_FF_CANVAS_HEIGHT)))
    let animated = WebPDemuxGetI(demuxer, WEBP_FF_FORMAT_FLAGS) & ANIMATION_FLAG.rawValue != 0
    frameCount = animated ? Int(WebPDemuxGetI(demuxer, WEBP_FF_FRAME_COUNT)) : 1
    loopCount = Int(WebPDemuxGetI(demuxer, WEBP_FF_LOOP_COUNT))
    var frame = WebPIterator()
    guard WebPDemuxGetFrame(demuxer, 1, &frame) != 0, let fragment = frame.fragment.bytes else {
      WebPDemuxReleaseIterator(&frame)
      WebPDemuxDelete(demuxer)
      throw JobError(.corruptImage, "WebP file has no image")
    }
    bitstream = (fragment, frame.fragment.size)
    let frameSize = PixelSize(width: Int(frame.width), height: Int(frame.height))
    let composed = animated && (frame.x_offset != 0 || frame.y_offset != 0 || frameSize != canvas)
    composedFrame = composed ? frameSize : nil
    WebPDemuxReleaseIterator(&frame)
    var features = WebPBitstreamFeatures()
    let status = WebPGetFeatures(bitstream.0, bitstream.1, &features)
    guard status == VP8_STATUS_OK, features.width > 0, features.height > 0 else {
      WebPDemuxDelete(demuxer)
      throw Self.jobError(status, what: "WebP header")
    }
    // Composed, the canvas around the frame is transparent: the picture has alpha whatever the frame's.
    header = SourceHeader(
      format: .webp,
      storedSize: composed ? canvas : PixelSize(width: Int(features.width), height: Int(features.height)),
      orientation: orientation, hasAlpha: composed || features.has_alpha != 0, color: color)
  }

  deinit { WebPDemuxDelete(demuxer) }

  func decode(requiredScale: Double, margin: Double) throws(JobError) -> DecodedSource {
    if composesOnCanvas { return try decodeComposed() }
    var config = WebPDecoderConfig()
    guard WebPInitDecoderConfig(&config) != 0 else {
      throw JobError(.internalError, "libwebp version mismatch")
    }
    let stored = header.storedSize
    var size = stored
    if let reduced = RenderPlanner.reducedDecodeSize(stored, requiredScale: requiredScale, margin: margin) {
      size = reduced
      config.options.use_scaling = 1
      config.options.scaled_width = Int32(size.width)
      config.options.scaled_height = Int32(size.height)
    }
    let channels = header.hasAlpha ? 4 : 3
    let stride = size.width * channels
    var pixels = [UInt8](repeating: 0, count: stride * size.height)
    let status = pixels.withUnsafeMutableBufferPointer { out in
      config.output.colorspace = header.hasAlpha ? MODE_rgbA : MODE_RGB
      config.output.is_external_memory = 1
      config.output.u.RGBA.rgba = out.baseAddress
      config.output.u.RGBA.stride = Int32(stride)
      config.output.u.RGBA.size = out.count
      return WebPDecode(bitstream.0, bitstream.1, &config)
    }
    guard status == VP8_STATUS_OK else { throw Self.jobError(status, what: "WebP data") }
    // An animation's first frame that covers the canvas yet shows nothing (a blank or flat start): the
    // next frames are looked at, as for a first frame composed on the canvas.
    if frameCount > 1,
      pixels.withUnsafeBufferPointer({
        FrameContent.isMostlyOneColour(
          rgba: $0, width: size.width, height: size.height, stride: stride, channels: channels)
      })
    {
      pixels = []
      return try decodeComposed()
    }
    let image = pixels.withUnsafeBufferPointer {
      PlanarImage(
        interleaved: $0.baseAddress!, size: size, stride: stride, model: header.hasAlpha ? .rgba : .rgb,
        premultiplied: true)
    }
    return DecodedSource(image: image, reduction: size == stored ? "1/1" : "scaled to \(size)")
  }

  /// The first frame worth showing on its canvas, through libwebp's animation decoder, at full size: it
  /// has no scaled decoding (the resampler reduces the canvas like any other decoded image). A frame
  /// that leaves the canvas nearly one colour (FrameContent) is passed over for the next, as a GIF's is,
  /// up to GIFSource.framesLooked; with nothing better, the last one looked at. (A first frame that
  /// covers the canvas is decoded alone, scaled, and comes here only when it shows nothing.)
  private func decodeComposed() throws(JobError) -> DecodedSource {
    let animation = try WebPAnimation(file)
    let canvas = animation.canvas
    guard canvas == header.storedSize else {
      throw JobError(
        .corruptImage, "WebP animation: the canvas is \(canvas), the container said \(header.storedSize)")
    }
    func picture(_ rows: UnsafePointer<UInt8>) -> PlanarImage {
      PlanarImage(
        interleaved: rows, size: canvas, stride: canvas.width * 4, model: .rgba, premultiplied: true)
    }
    func blank(_ rows: UnsafePointer<UInt8>) -> Bool {
      FrameContent.isMostlyOneColour(
        rgba: UnsafeBufferPointer(start: rows, count: canvas.pixels * 4), width: canvas.width,
        height: canvas.height, stride: canvas.width * 4)
    }
    // Only the frame kept becomes planes: looking on holds nothing but libwebp's own canvases.
    var chosen: PlanarImage?
    var shown = 1
    try animation.withFirstFrame { rows in
      if !animation.hasMoreFrames || !blank(rows) { chosen = picture(rows) }
    }
    while chosen == nil {
      let last = shown + 1 >= GIFSource.framesLooked
      let given: Bool? = try? animation.withNextFrame { rows, _ in
        if last || !animation.hasMoreFrames || !blank(rows) { chosen = picture(rows) }
        return true
      }
      guard given == true else { break }
      shown += 1
    }
    guard let image = chosen else {
      // A later frame did not decode before one was kept: the first frame, composed anew.
      let image = try WebPAnimation(file).withFirstFrame(picture)
      return DecodedSource(image: image, reduction: "1/1, first frame composed on the canvas")
    }
    return DecodedSource(
      image: image,
      reduction: shown > 1
        ? "frame \(shown) composed on the canvas" : "1/1, first frame composed on the canvas")
  }

  func frames() throws(JobError) -> any AnimationFrames {
    let animation = try WebPAnimation(file)
    guard animation.canvas == header.storedSize || !composesOnCanvas else {
      throw JobError(
        .corruptImage, "WebP animation: the canvas is \(animation.canvas), the container said otherwise")
    }
    return WebPFrames(animation)
  }

  static func jobError(_ status: VP8StatusCode, what: String) -> JobError {
    switch status {
    case VP8_STATUS_UNSUPPORTED_FEATURE:
      return JobError(.unsupportedFormat, "\(what): unsupported WebP feature")
    case VP8_STATUS_OUT_OF_MEMORY: return JobError(.tooLarge, "\(what): out of memory")
    default:
      return JobError(.corruptImage, "\(what): damaged or truncated (libwebp status \(status.rawValue))")
    }
  }
}

/// An animated WebP's frames from the first, composed by libwebp's animation decoder.
final class WebPFrames: AnimationFrames {
  private let animation: WebPAnimation
  private var shown = 0
  private var given = 0

  init(_ animation: WebPAnimation) { self.animation = animation }

  func next() throws(JobError) -> AnimationFrame? {
    let canvas = animation.canvas
    let frame: (PlanarImage, Int)?
    do {
      frame = try animation.withNextFrame { rows, timestamp in
        (
          PlanarImage(
            interleaved: rows, size: canvas, stride: canvas.width * 4, model: .rgba, premultiplied: true),
          timestamp
        )
      }
    } catch {
      if given == 0 { throw error }
      return nil
    }
    guard let (image, timestamp) = frame else { return nil }
    given += 1
    // The decoder gives each frame's end time.
    let duration = max(0, timestamp - shown)
    shown = timestamp
    return AnimationFrame(image: image, duration: duration)
  }
}

extension WebPSource: FormatDecoder {
  static let formats: Set<ImageFormat> = [.webp]

  static func open(
    _ original: OriginalBytes, format: ImageFormat, maxPixels: Int
  ) throws(JobError) -> WebPSource {
    try WebPSource(original.wholeFile(of: format))
  }
}
