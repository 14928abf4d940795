/// How a variant fills its box.
public enum Fit: String, Sendable, Codable, CaseIterable {
  /// The whole picture, as large as fits inside the box.
  case inside
  /// The box filled completely; what overflows is cropped, from both sides equally unless the variant's
  /// `crop` says otherwise (CropStrategy).
  case cover
  /// The whole picture stretched to the box, ignoring its aspect ratio (each side capped at the
  /// source's, so nothing is upscaled).
  case fill
}

/// Which part of the picture a `cover` variant keeps when the box's aspect differs from the picture's.
public enum CropStrategy: String, Sendable, Codable, CaseIterable {
  /// The middle: what overflows is cut equally from both sides.
  case centre
  /// The window with the most salient content: edges, saturated colour and skin tones (SmartCrop).
  case attention
  /// The window whose luma carries the most information: the highest Shannon entropy (SmartCrop).
  case entropy
}

/// The encoding of a rendered variant.
public enum OutputFormat: String, Sendable, Codable, CaseIterable {
  case jpeg, webp, png, avif

  public var fileExtension: String {
    switch self {
    case .jpeg: return "jpg"
    case .webp: return "webp"
    case .png: return "png"
    case .avif: return "avif"
    }
  }

  public var contentType: String { "image/\(rawValue)" }
}

/// The encoding a profile asks for: a format, or `auto` (PNG when the original has transparency,
/// JPEG otherwise).
public enum VariantFormat: String, Sendable, Codable, CaseIterable {
  case jpeg, webp, png, avif, auto

  public func resolved(sourceHasAlpha: Bool) -> OutputFormat {
    switch self {
    case .jpeg: return .jpeg
    case .webp: return .webp
    case .png: return .png
    case .avif: return .avif
    case .auto: return sourceHasAlpha ? .png : .jpeg
    }
  }
}

/// JPEG chroma subsampling: 4:2:0 (half-resolution colour, the usual choice for photos) or 4:4:4.
public enum ChromaSubsampling: String, Sendable, Codable, CaseIterable {
  case s420 = "4:2:0"
  case s444 = "4:4:4"
}

/// One thumbnail a profile asks for.
public struct VariantSpec: Sendable, Hashable, Codable {
  public var name: String
  public var width: Int
  public var height: Int
  public var fit: Fit
  public var format: VariantFormat
  /// JPEG, WebP and AVIF quality, 1-100 (PNG is lossless and ignores it).
  public var quality: Int
  /// AVIF only: the AV1 encoder's speed, 0 (slowest, smallest) to 9.
  public var speed: Int
  /// JPEG only.
  public var subsampling: ChromaSubsampling
  /// JPEG only: progressive scans (smaller for large variants, shown coarse-to-fine while loading).
  public var progressive: Bool
  /// `cover` only: which part of the picture is kept.
  public var crop: CropStrategy
  /// WebP only: keep an animated original's motion, as much of it as these limits allow (the variant's
  /// `animated`, the profile's `animation`). Nil: one frame, as for a still.
  public var animation: AnimationLimits?

  public init(
    name: String, width: Int, height: Int, fit: Fit, format: VariantFormat, quality: Int,
    subsampling: ChromaSubsampling = .s420, progressive: Bool = false, crop: CropStrategy = .centre,
    speed: Int = VariantSpec.defaultAVIFSpeed, animation: AnimationLimits? = nil
  ) {
    self.name = name
    self.width = width
    self.height = height
    self.fit = fit
    self.format = format
    self.quality = quality
    self.subsampling = subsampling
    self.progressive = progressive
    self.crop = crop
    self.speed = speed
    self.animation = animation
  }

  /// The AV1 encoder's speed when a variant does not say. Not libheif's 6: at 8 a large variant costs a
  /// quarter of the encode time for about a tenth more bytes (docs/benchmarks/formats.md).
  public static let defaultAVIFSpeed = 8

  public var box: PixelSize { PixelSize(width: width, height: height) }
}

/// How much of an animation an animated variant keeps: the frames from the first, as long as there are
/// at most `maxFrames` of them and they last at most `maxSeconds` together (at least the first frame).
/// Motion sampled from a video (a video, a Live Photo's MOV, a Motion Photo's clip) is a preview of
/// `previewSeconds` at `fps` frames a second, within the same limits.
public struct AnimationLimits: Sendable, Hashable, Codable {
  public var maxFrames: Int
  public var maxSeconds: Double
  public var previewSeconds: Double
  public var fps: Int

  public init(
    maxFrames: Int = AnimationLimits.default.maxFrames,
    maxSeconds: Double = AnimationLimits.default.maxSeconds,
    previewSeconds: Double = AnimationLimits.default.previewSeconds,
    fps: Int = AnimationLimits.default.fps
  ) {
    self.maxFrames = maxFrames
    self.maxSeconds = maxSeconds
    self.previewSeconds = previewSeconds
    self.fps = fps
  }

  /// A profile without `animation`: enough for the GIFs people post (a few seconds at 10-25 frames a
  /// second), short enough that one job stays a job; a video's preview as photo grids loop them.
  public static let `default` = AnimationLimits(maxFrames: 100, maxSeconds: 10, previewSeconds: 3, fps: 10)
  public static let frameRange = 1...1000
  public static let maxSecondsLimit = 600.0
  /// Every frame of a preview is decoded: a minute of video is as long as one job should decode.
  public static let maxPreviewSeconds = 60.0
  public static let fpsRange = 1...30
}

/// A named set of variants, stored as JSON in `thumbs.profiles.spec`.
public struct Profile: Sendable, Hashable {
  public var name: String
  public var variants: [VariantSpec]
  /// A video's poster: the keyframe at or before this many seconds (nil: the first worth showing,
  /// PosterChoice).
  public var posterAt: Double?

  public init(name: String, variants: [VariantSpec], posterAt: Double? = nil) {
    self.name = name
    self.variants = variants
    self.posterAt = posterAt
  }

  /// The `default` profile of CONTRACT.md; migrations seed the same spec into the database.
  public static let `default` = Profile(
    name: "default",
    variants: [
      VariantSpec(name: "large", width: 1600, height: 1600, fit: .inside, format: .jpeg, quality: 82),
      VariantSpec(name: "medium", width: 800, height: 800, fit: .inside, format: .jpeg, quality: 82),
      VariantSpec(name: "small", width: 320, height: 320, fit: .inside, format: .jpeg, quality: 80),
      VariantSpec(name: "square", width: 256, height: 256, fit: .cover, format: .jpeg, quality: 80),
    ])
}
