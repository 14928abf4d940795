import Foundation

/// What a job's original was beyond a plain photo: the `media` of the job's row, its `succeeded` event
/// and its webhook (null for a plain photo). A video's sizes are the upright display size of its poster;
/// a still says only what moves with it (an embedded clip, a Live Photo's identifier).
public struct MediaInfo: Codable, Sendable, Equatable {
  /// "video", or "image" for a still with motion.
  public var kind: String
  /// Seconds, when the container says.
  public var durationSeconds: Double?
  public var width: Int?
  public var height: Int?
  /// The video codec: h264, hevc, mpeg4, h263, vp8, vp9, av1.
  public var codec: String?
  /// The container by its brand: mp4, mov, m4v, 3gp, webm, matroska.
  public var container: String?
  /// Bits per sample of the coded pictures (8, 10, 12); nil when unknown.
  public var bitDepth: Int?
  /// "sdr", "pq" or "hlg", by the stream's transfer characteristics.
  public var dynamicRange: String?
  /// A still's embedded clip (a Motion Photo).
  public var motion: Motion?
  /// What pairs a Live Photo's still and its MOV: the same on both.
  public var livePhotoID: String?

  /// A Motion Photo's clip: where it lies in the file, what it is, and the still's moment in it.
  public struct Motion: Codable, Sendable, Equatable {
    public var offset: Int
    public var length: Int
    public var durationMs: Int?
    public var codec: String
    /// Milliseconds from the clip's start to the still's moment, when the file says.
    public var stillMs: Int?

    public init(offset: Int, length: Int, durationMs: Int?, codec: String, stillMs: Int?) {
      self.offset = offset
      self.length = length
      self.durationMs = durationMs
      self.codec = codec
      self.stillMs = stillMs
    }

    enum CodingKeys: String, CodingKey {
      case offset, length, codec
      case durationMs = "duration_ms"
      case stillMs = "still_ms"
    }
  }

  /// A video's facts.
  public init(
    durationSeconds: Double?, width: Int, height: Int, codec: String, container: String, bitDepth: Int?,
    dynamicRange: String, livePhotoID: String? = nil
  ) {
    kind = "video"
    self.durationSeconds = durationSeconds
    self.width = width
    self.height = height
    self.codec = codec
    self.container = container
    self.bitDepth = bitDepth
    self.dynamicRange = dynamicRange
    self.livePhotoID = livePhotoID
  }

  /// A still's: nil when it has neither motion nor a Live Photo's identifier (a plain photo).
  public static func still(motion: Motion?, livePhotoID: String?) -> MediaInfo? {
    guard motion != nil || livePhotoID != nil else { return nil }
    return MediaInfo(kind: "image", motion: motion, livePhotoID: livePhotoID)
  }

  private init(kind: String, motion: Motion?, livePhotoID: String?) {
    self.kind = kind
    self.motion = motion
    self.livePhotoID = livePhotoID
  }

  enum CodingKeys: String, CodingKey {
    case kind, width, height, codec, container, motion
    case durationSeconds = "duration_seconds"
    case bitDepth = "bit_depth"
    case dynamicRange = "dynamic_range"
    case livePhotoID = "live_photo_id"
  }

  /// The JSON object thumbs.jobs.media holds (keys sorted, so equal values print equally).
  public var json: String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
  }

  public init?(json: String) {
    guard let value = try? JSONDecoder().decode(MediaInfo.self, from: Data(json.utf8)) else { return nil }
    self = value
  }
}
