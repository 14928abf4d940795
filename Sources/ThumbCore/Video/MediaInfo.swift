import Foundation

/// What a job's original was when it was not a photo: the `media` of the job's row, its `succeeded`
/// event and its webhook (null for photos). Sizes are the upright display size of the poster.
public struct MediaInfo: Codable, Sendable, Equatable {
  /// "video".
  public var kind: String
  /// Seconds, when the container says.
  public var durationSeconds: Double?
  public var width: Int
  public var height: Int
  /// The video codec: h264, hevc, mpeg4, h263, vp8, vp9, av1.
  public var codec: String
  /// The container by its brand: mp4, mov, m4v, 3gp, webm, matroska.
  public var container: String
  /// Bits per sample of the coded pictures (8, 10, 12); nil when unknown.
  public var bitDepth: Int?
  /// "sdr", "pq" or "hlg", by the stream's transfer characteristics.
  public var dynamicRange: String

  public init(
    kind: String = "video", durationSeconds: Double?, width: Int, height: Int, codec: String,
    container: String,
    bitDepth: Int?, dynamicRange: String
  ) {
    self.kind = kind
    self.durationSeconds = durationSeconds
    self.width = width
    self.height = height
    self.codec = codec
    self.container = container
    self.bitDepth = bitDepth
    self.dynamicRange = dynamicRange
  }

  enum CodingKeys: String, CodingKey {
    case kind, width, height, codec, container
    case durationSeconds = "duration_seconds"
    case bitDepth = "bit_depth"
    case dynamicRange = "dynamic_range"
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
