/// How a variant fills its box.
public enum Fit: String, Sendable, Codable, CaseIterable {
  /// The whole picture, as large as fits inside the box.
  case inside
  /// The box filled completely; what overflows is cropped equally from both sides (centre crop).
  case cover
}

/// The encoding of a variant.
public enum OutputFormat: String, Sendable, Codable, CaseIterable {
  case jpeg

  public var fileExtension: String {
    switch self {
    case .jpeg: return "jpg"
    }
  }

  public var contentType: String {
    switch self {
    case .jpeg: return "image/jpeg"
    }
  }
}

/// One thumbnail a profile asks for.
public struct VariantSpec: Sendable, Hashable, Codable {
  public var name: String
  public var width: Int
  public var height: Int
  public var fit: Fit
  public var format: OutputFormat
  public var quality: Int

  public init(name: String, width: Int, height: Int, fit: Fit, format: OutputFormat, quality: Int) {
    self.name = name
    self.width = width
    self.height = height
    self.fit = fit
    self.format = format
    self.quality = quality
  }

  public var box: PixelSize { PixelSize(width: width, height: height) }
}

/// A named set of variants, stored as JSON in `thumbs.profiles.spec`.
public struct Profile: Sendable, Hashable {
  public var name: String
  public var variants: [VariantSpec]

  public init(name: String, variants: [VariantSpec]) {
    self.name = name
    self.variants = variants
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
