import ThumbCore

/// One frame of an animation as a viewer shows it: the whole canvas, in stored orientation.
struct AnimationFrame {
  var image: PlanarImage
  /// How long it is shown, in milliseconds.
  var duration: Int
}

/// An animation's frames in the order they play, each composed onto the canvas (offsets, blending,
/// disposal, transparency).
protocol AnimationFrames: AnyObject {
  /// The next frame; nil when none is left, or when the file is damaged after the frames given so far
  /// (what played until then stands, as in a browser).
  func next() throws(JobError) -> AnimationFrame?
}

/// A decoder whose original may be an animation (GIF, WebP).
protocol AnimatedSource: SourceDecoder {
  /// Frames as the file declares them: 1 for a still.
  var frameCount: Int { get }
  /// Times the animation plays, 0 for ever.
  var loopCount: Int { get }
  /// The frames from the first, from a reader of their own: the still's decode does not move it.
  func frames() throws(JobError) -> any AnimationFrames
}

extension AnimationFrame {
  /// Browsers show a GIF frame of 0 or 10 ms for 100 ms (so do gif2webp and libvips): the delay a viewer
  /// sees, from the file's hundredths of a second.
  static func shownDuration(gifDelay: Int) -> Int { gifDelay <= 1 ? 100 : gifDelay * 10 }
}
