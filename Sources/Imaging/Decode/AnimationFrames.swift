import ThumbCore

/// One frame of an animation as a viewer shows it: the whole canvas, in stored orientation.
struct AnimationFrame {
  var image: PlanarImage
  /// How long it is shown, in milliseconds.
  var duration: Int
  /// The planes' colours when they differ from the animation's header (a video frame tone-mapped to
  /// sRGB); nil when they are as the header says.
  var color: ColorDescription?
}

/// An animation's frames in the order they play, each composed onto the canvas (offsets, blending,
/// disposal, transparency).
protocol AnimationFrames: AnyObject {
  /// The next frame; nil when none is left, or when the file is damaged after the frames given so far
  /// (what played until then stands, as in a browser).
  func next() throws(JobError) -> AnimationFrame?
}

/// Motion an animated variant is made of: an animated original's frames, or a preview of a video's.
protocol Animation: AnyObject {
  /// The canvas: its stored size, its turn and its colours.
  var header: SourceHeader { get }
  /// Times the animation plays, 0 for ever.
  var loopCount: Int { get }
  /// Canvas pixels its frames may cost altogether (every frame is decoded whole); past it the
  /// animation is cut, as at its limits.
  var pixelBudget: Int { get }
  /// The frames from the first, from a reader of their own: the still's decode does not move it.
  func frames() throws(JobError) -> any AnimationFrames
}

/// A decoder whose original may be an animation (GIF, WebP).
protocol AnimatedSource: SourceDecoder, Animation {
  /// Frames as the file declares them: 1 for a still.
  var frameCount: Int { get }
}

extension AnimatedSource {
  var pixelBudget: Int { Thumbnailer.animationPixelBudget }
}

extension AnimationFrame {
  /// Browsers show a GIF frame of 0 or 10 ms for 100 ms (so do gif2webp and libvips): the delay a viewer
  /// sees, from the file's hundredths of a second.
  static func shownDuration(gifDelay: Int) -> Int { gifDelay <= 1 ? 100 : gifDelay * 10 }
}
