import ThumbCore

/// A short looping preview of a video's motion (a video, a Live Photo's MOV, a Motion Photo's clip):
/// `previewSeconds` of it sampled at `fps` frames a second, for the animated variants. Every frame of
/// the window is decoded, in sequence from the keyframe before it, but those shown before the next
/// sample that nothing refers to; the search stops at the poster search's time budget, keeping what it
/// made by then.
final class VideoPreview: Animation {
  let video: VideoSource
  /// The window, in seconds of the clip.
  let start: Double
  let end: Double
  let fps: Int
  /// Reduced enough that the loop filters' work and half of an HDR frame do not survive the resampling.
  let skipLoopFilters: Bool
  let halveHDR: Bool

  /// Where the window lies: from the poster for a video, around the still's moment for a clip
  /// embedded with a still or a Live Photo's MOV (its end when the file does not say: Samsung's moment
  /// is the clip's last frames); kept inside the clip, and the whole clip when it is shorter.
  enum Window {
    case from(Double)
    case around(Double?)
  }

  init(_ video: VideoSource, window: Window, limits: AnimationLimits, requiredScale: Double) {
    self.video = video
    (start, end) = Self.seconds(of: window, in: video, limits: limits)
    fps = limits.fps
    skipLoopFilters = requiredScale <= HEVCTiles.loopFilterScale
    halveHDR = requiredScale <= 0.5
    // At twice the preview's rate or more, every sample has a frame within one of the clip's frames of
    // it, and streams with B-frames refer to every other one: the frames nothing refers to are not
    // decoded, and a sample shows the next reference frame (at most one frame of the clip late).
    let rate = video.facts.duration.flatMap { $0 > 0 ? Double(video.stream.indexEntries) / $0 : nil } ?? 0
    referencesOnly = rate >= 2 * Double(limits.fps)
  }

  /// Only frames others refer to are decoded (VideoSource.nextFrame).
  let referencesOnly: Bool

  /// A video's window: from its poster; a Live Photo's MOV around its middle, where the still was taken
  /// (the camera keeps about as much before the still as after; its `still-image-time` track is not
  /// read).
  static func window(of video: VideoSource) -> Window {
    if video.facts.livePhotoID != nil { return .around(video.facts.duration.map { $0 / 2 }) }
    return .from(video.posterTime ?? 0)
  }

  /// The window's first and last second in the clip.
  static func seconds(
    of window: Window, in video: VideoSource, limits: AnimationLimits
  ) -> (start: Double, end: Double) {
    let length = limits.previewSeconds
    let duration = video.facts.duration ?? .infinity
    var start: Double
    switch window {
    case .from(let seconds): start = seconds
    case .around(let moment?): start = moment - length / 2
    case .around(nil): start = duration.isFinite ? duration - length : 0
    }
    start = max(0, min(start, duration - length))
    return (start, start + length)
  }

  /// For a video read by ranges whose poster was found: the samples of the preview's window it does
  /// not hold, and the search that decodes the same poster once they are read. Nil when nothing is
  /// missing, no variant is animated, or its caller cannot read more.
  static func samplesWanted(
    _ decoder: any SourceDecoder, variants: [VariantSpec]
  ) -> ([Range<Int>], PosterSearch)? {
    guard let video = decoder as? VideoSource, video.asksForKeyframes, let search = video.finishedSearch,
      let limits = variants.lazy.compactMap(\.animation).first
    else { return nil }
    let window = seconds(of: Self.window(of: video), in: video, limits: limits)
    let missing = video.missingSamples(from: window.start, until: window.end)
    return missing.isEmpty ? nil : (missing, search)
  }

  /// Frames are as the video's stored size; their colours come with each (an HDR one tone-mapped).
  var header: SourceHeader {
    var header = video.header
    header.color = video.sdrColor
    return header
  }
  var loopCount: Int { 0 }
  /// The decode budget bounds a preview, not its pixels: a 4K clip's frames are many.
  var pixelBudget: Int { .max }

  func frames() throws(JobError) -> any AnimationFrames {
    try video.play(from: start)
    return Frames(self)
  }

  /// The samples in order. Each frame is held until the next is found, so that it lasts until the
  /// next one is shown (a clip slower than `fps` repeats none; a gap lasts).
  final class Frames: AnimationFrames {
    let preview: VideoPreview
    let step: Double
    let deadline: Int64
    /// The next sample's time, and the frame found for the last one with its sample time.
    var wanted: Double
    var held: (image: PlanarImage, sample: Double, toneMapped: Bool)?
    var ended = false

    init(_ preview: VideoPreview) {
      self.preview = preview
      step = 1 / Double(preview.fps)
      wanted = preview.start
      deadline = preview.video.deadline(after: preview.video.decodeBudget)
    }

    func next() throws(JobError) -> AnimationFrame? {
      while !ended {
        let found: (image: PlanarImage, time: Double, toneMapped: Bool)?
        do {
          found = try preview.video.nextFrame(
            wanted: wanted, until: preview.end - step / 2, skipLoopFilters: preview.skipLoopFilters,
            referencesOnly: preview.referencesOnly, halveHDR: preview.halveHDR, deadline: deadline)
        } catch {
          // Out of time or damaged after some frames: what was made stands.
          if held == nil { throw error }
          found = nil
        }
        guard let found else {
          ended = true
          break
        }
        // The sample this frame stands for: the last of the grid at or before its time.
        let samples = max(0, ((found.time - preview.start + 0.005) / step).rounded(.down))
        let sample = preview.start + samples * step
        wanted = sample + step
        let shown = held
        held = (found.image, sample, found.toneMapped)
        if let shown {
          return frame(shown, lasting: sample - shown.sample)
        }
      }
      defer { held = nil }
      return held.map { frame($0, lasting: step) }
    }

    private func frame(
      _ shown: (image: PlanarImage, sample: Double, toneMapped: Bool), lasting seconds: Double
    ) -> AnimationFrame {
      AnimationFrame(
        image: shown.image, duration: max(1, Int((seconds * 1000).rounded())),
        color: shown.toneMapped ? .unspecified : nil)
    }
  }
}
