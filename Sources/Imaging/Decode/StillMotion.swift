import ThumbCore

/// What moves with a still, read when it is opened, from the whole file: its embedded clip (a Motion
/// Photo), opened for its duration and codec, and a Live Photo's identifier. A clip the file claims but
/// that cannot be read leaves the still a plain still, with a warning.
struct StillMotion: Sendable {
  /// What the job's row says (nil for a plain still).
  var media: MediaInfo?
  var warnings: [RenderWarning] = []
  /// Where the clip lies, when there is one, and what decoding it takes.
  var clip: EmbeddedClip?
  var clipStream: VideoStreamShape?
  var clipHDR = false

  static func describe(_ original: OriginalBytes, format: ImageFormat, maxPixels: Int) -> StillMotion {
    guard format == .jpeg || format == .heif, let bytes = original.whole else { return StillMotion() }
    var described = StillMotion()
    var motion: MediaInfo.Motion?
    switch EmbeddedClip.find(in: bytes, format: format) {
    case .none:
      break
    case .unreadable(let why):
      described.warnings.append(unreadable(why))
    case .clip(let clip):
      do {
        let video = try VideoSource(.whole(Array(bytes[clip.range])), maxPixels: maxPixels)
        motion = MediaInfo.Motion(
          offset: clip.offset, length: clip.length,
          durationMs: video.facts.duration.map { Int(($0 * 1000).rounded()) }, codec: video.facts.codec,
          stillMs: clip.stillMicroseconds.map { ($0 + 500) / 1000 })
        described.clip = clip
        described.clipStream = video.stream
        described.clipHDR = video.header.color.hdr != nil
      } catch {
        described.warnings.append(
          unreadable("the clip at bytes \(clip.offset)+\(clip.length): \(error.message)"))
      }
    }
    described.media = .still(motion: motion, livePhotoID: LivePhotoIdentifier.ofStill(bytes, format: format))
    return described
  }

  static func unreadable(_ why: String) -> RenderWarning {
    RenderWarning(
      code: RenderWarning.motionUnreadable, message: "the still was rendered without its motion: \(why)")
  }
}
