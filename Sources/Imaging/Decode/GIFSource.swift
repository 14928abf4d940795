import CGIFDecoder
import ThumbCore

/// A GIF, static or animated, through giflib: the first frame worth showing, composited onto the canvas
/// as a browser shows it (CGIFDecoder: disposal, transparency, palettes, interlacing). A frame of an
/// animation that leaves the canvas blank or nearly one colour (FrameContent: a fade in, a background
/// drawn first, a pixel on a transparent canvas) is passed over for the next, up to `framesLooked` and eight canvases' worth of decompressed pixels; a
/// GIF with nothing better gives its last one looked at.
final class GIFSource: AnimatedSource {
  /// Frames decompressed at most looking for one worth showing: each costs at most a canvas.
  static let framesLooked = 32

  let header: SourceHeader
  let structure: GIFStructure
  private let bytes: OwnedBytes
  private var gif: OpaquePointer?

  init(_ data: [UInt8], maxPixels: Int) throws(JobError) {
    guard let structure = GIFStructure.read(data) else { throw JobError(.corruptImage, "not a GIF header") }
    let canvas = structure.canvas
    guard canvas.width > 0, canvas.height > 0 else {
      throw JobError(.corruptImage, "the GIF's canvas is \(canvas)")
    }
    guard canvas.pixels <= maxPixels else {
      throw JobError(.tooLarge, "a \(canvas) GIF canvas is over the limit of \(maxPixels) pixels")
    }
    guard structure.frames > 0 else { throw JobError(.corruptImage, "the GIF has no frame") }
    // A frame is decompressed whole, however little of it lies on the canvas.
    guard structure.largestFrame <= maxPixels else {
      throw JobError(
        .tooLarge, "a GIF frame of \(structure.largestFrame) pixels is over the limit of \(maxPixels) pixels")
    }
    self.structure = structure
    bytes = OwnedBytes(data)
    gif = try Self.open(bytes)
    header = SourceHeader(
      format: .gif, storedSize: canvas, orientation: .up, hasAlpha: structure.transparent, color: .unspecified
    )
  }

  deinit { thumbd_gif_close(gif) }

  var frameCount: Int { structure.frames }
  var animation: (any AnimatedSource)? { frameCount > 1 ? self : nil }
  /// In WebP's terms, the times it plays: without a loop block a browser plays a GIF once; with one of N
  /// (not 0, for ever) it plays N + 1 times, as Chrome and Firefox do (and gif2webp converts).
  var loopCount: Int {
    guard let count = structure.loopCount else { return 1 }
    return count == 0 ? 0 : min(count + 1, 65535)
  }

  func frames() throws(JobError) -> any AnimationFrames {
    try GIFFrames(bytes, canvas: header.storedSize, opaque: !header.hasAlpha)
  }

  /// A giflib handle over `bytes` (which must outlive it), its screen descriptor read.
  static func open(_ bytes: OwnedBytes) throws(JobError) -> OpaquePointer? {
    var handle: OpaquePointer?
    var (width, height): (Int32, Int32) = (0, 0)
    var message = [CChar](repeating: 0, count: 256)
    guard
      thumbd_gif_open(
        bytes.pointer.assumingMemoryBound(to: UInt8.self), bytes.count, &handle, &width, &height, &message,
        message.count) == 0
    else { throw JobError(.corruptImage, text(message)) }
    return handle
  }

  private static func text(_ message: [CChar]) -> String {
    String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  func decode(requiredScale: Double, margin: Double) throws(JobError) -> DecodedSource {
    guard let gif else { throw JobError(.internalError, "the GIF was closed") }
    let size = header.storedSize
    var canvas = PixelBuffer(width: size.width, height: size.height, channels: 4)
    var message = [CChar](repeating: 0, count: 256)
    var shown = 0
    var frame = 0
    // Looking on costs each frame's whole area: at most `framesLooked` frames and as many pixels as
    // eight canvases (frames larger than the canvas count whole).
    var spent = 0
    let allowance = 8 * max(size.pixels, 1)
    while frame < Self.framesLooked {
      if frame > 0, frame < structure.frameAreas.count, spent + structure.frameAreas[frame] > allowance {
        break
      }
      if frame < structure.frameAreas.count { spent += structure.frameAreas[frame] }
      var delay: Int32 = 0
      let status = canvas.pixels.withUnsafeMutableBufferPointer {
        thumbd_gif_next_frame(gif, $0.baseAddress, &delay, &message, message.count)
      }
      if status == 0 { break }
      if status < 0 {
        // Damaged after a frame: what was composited stands, as a browser shows it.
        if shown > 0 { break }
        throw JobError(.corruptImage, Self.text(message))
      }
      frame += 1
      shown = frame
      if structure.frames == 1 || frame >= structure.frames || !Self.isBlank(canvas) { break }
    }
    guard shown > 0 else { throw JobError(.corruptImage, "no frame of the GIF decodes") }
    var image = PlanarImage(interleaved: canvas)
    if !header.hasAlpha || image.isOpaque { image = image.droppingAlpha() }
    return DecodedSource(image: image, reduction: shown > 1 ? "frame \(shown)" : "1/1")
  }

  /// Nothing painted, or nearly one colour over the whole picture (FrameContent): not worth a thumbnail
  /// while the animation has more to show.
  static func isBlank(_ canvas: PixelBuffer) -> Bool {
    canvas.pixels.withUnsafeBufferPointer {
      FrameContent.isMostlyOneColour(
        rgba: $0, width: canvas.width, height: canvas.height, stride: canvas.width * 4)
    }
  }
}

/// A GIF's frames from the first, on a canvas of its own, through a giflib handle of its own.
final class GIFFrames: AnimationFrames {
  private let bytes: OwnedBytes
  private var gif: OpaquePointer?
  private var canvas: PixelBuffer
  private let opaque: Bool
  private var given = 0

  init(_ bytes: OwnedBytes, canvas size: PixelSize, opaque: Bool) throws(JobError) {
    self.bytes = bytes
    self.opaque = opaque
    canvas = PixelBuffer(width: size.width, height: size.height, channels: 4)
    gif = try GIFSource.open(bytes)
  }

  deinit { thumbd_gif_close(gif) }

  func next() throws(JobError) -> AnimationFrame? {
    var delay: Int32 = 0
    var message = [CChar](repeating: 0, count: 256)
    let status = canvas.pixels.withUnsafeMutableBufferPointer {
      thumbd_gif_next_frame(gif, $0.baseAddress, &delay, &message, message.count)
    }
    guard status > 0 else {
      if status < 0 && given == 0 { throw JobError(.corruptImage, "the GIF's first frame is damaged") }
      return nil
    }
    given += 1
    // Alpha is 0 or 255 and cleared pixels are zero: the canvas is premultiplied as it stands.
    var image = canvas.pixels.withUnsafeBufferPointer {
      PlanarImage(
        interleaved: $0.baseAddress!, size: canvas.size, stride: canvas.rowBytes, model: .rgba,
        premultiplied: true)
    }
    if opaque || image.isOpaque { image = image.droppingAlpha() }
    return AnimationFrame(image: image, duration: AnimationFrame.shownDuration(gifDelay: Int(delay)))
  }
}

extension PlanarImage {
  /// RGBA whose every pixel is fully opaque (false for any other model).
  var isOpaque: Bool {
    guard model == .rgba else { return false }
    return planes[3].withUnsafeBufferPointer { alpha in
      let plane = planes[3]
      for y in 0..<plane.height {
        for x in 0..<plane.width where alpha[y * plane.stride + x] != 255 { return false }
      }
      return true
    }
  }

  /// An opaque RGBA image as RGB (its colour planes are unchanged: premultiplied by 255).
  func droppingAlpha() -> PlanarImage {
    guard model == .rgba else { return self }
    var result = self
    result.planes.removeLast()
    result.subsampling.removeLast()
    result.model = .rgb
    return result
  }
}

extension GIFSource: FormatDecoder {
  static let formats: Set<ImageFormat> = [.gif]

  static func open(
    _ original: OriginalBytes, format: ImageFormat, maxPixels: Int
  ) throws(JobError) -> GIFSource {
    try GIFSource(original.wholeFile(of: format), maxPixels: maxPixels)
  }
}
