public import Foundation

/// Reads and validates the JSON of `thumbs.profiles.spec`:
/// `{"variants": [{"name": "large", "width": 1600, "height": 1600, "fit": "inside", "format": "jpeg",
/// "quality": 82}, ...]}`. `fit` (inside, cover, fill) defaults to `inside`, `format` (jpeg, webp, png,
/// avif, auto) to `jpeg`, `quality` to 82, `subsampling` ("4:2:0" or "4:4:4", JPEG only) to "4:2:0",
/// `progressive` (JPEG only) to false, `speed` (0-9, AVIF only) to 8, `crop` (centre, attention, entropy;
/// `fit: cover` only) to centre. A `null` value is the default. `"poster": {"at": SECONDS}` (0 to 86400)
/// makes a video's poster the keyframe at or before that time instead of the first worth showing.
/// `"animated": true` (with `"format": "webp"`) keeps an animated original's motion, up to the profile's
/// `"animation": {"max_frames": N, "max_seconds": S}` (N 1 to 1000, default 100; S above 0 up to 600,
/// default 10); of a video, a Live Photo's MOV or a Motion Photo it makes a preview of
/// `"preview_seconds"` (above 0 up to 60, default 3) at `"fps"` frames a second (1 to 30, default 10).
///
/// Unknown keys are refused, so a misspelt option is not ignored. Every problem is reported with the
/// variant and field it concerns, since operators write these by hand: at most one per variant (the
/// first in the order below), every variant's. The database checks a spec when it is written with the
/// same rules and the same words (`thumbs.check_profile`, migrations/0015; BackendChecksTests holds the
/// two to one table): keep them together.
public enum ProfileSpec {
  public static let maxDimension = 8192

  public struct Invalid: Error, Sendable, CustomStringConvertible {
    public var profile: String
    public var reason: String
    public var description: String { "profile '\(profile)' is invalid: \(reason)" }
  }

  static let specKeys: Set<String> = ["animation", "poster", "variants"]
  static let animationKeys: Set<String> = ["max_frames", "max_seconds", "preview_seconds", "fps"]
  static let maxPosterSeconds = 86_400.0
  static let variantKeys: Set<String> = [
    "name", "width", "height", "fit", "format", "quality", "subsampling", "progressive", "speed", "crop",
    "animated",
  ]

  public static func parse(name: String, json: Data) throws(Invalid) -> Profile {
    switch read(json) {
    case .success(let spec): return Profile(name: name, variants: spec.variants, posterAt: spec.posterAt)
    case .failure(let problems):
      throw Invalid(profile: name, reason: problems.list.joined(separator: "; "))
    }
  }

  /// What is wrong with a spec, in order; empty when it is valid.
  public static func problems(in json: Data) -> [String] {
    switch read(json) {
    case .success: return []
    case .failure(let problems): return problems.list
    }
  }

  struct Problems: Error { var list: [String] }

  static func read(_ json: Data) -> Result<(variants: [VariantSpec], posterAt: Double?), Problems> {
    guard let spec = try? JSONDecoder().decode(SpecValue.self, from: json) else {
      return .failure(Problems(list: ["spec is not JSON"]))
    }
    guard case .object(let fields) = spec else {
      return .failure(Problems(list: ["spec must be a JSON object"]))
    }
    if let unknown = unknownKey(fields, known: specKeys) {
      return .failure(Problems(list: ["unknown key \"\(unknown)\" (known: \(known(specKeys)))"]))
    }
    guard case .array(let items)? = fields["variants"], !items.isEmpty else {
      return .failure(Problems(list: ["spec needs a non-empty \"variants\" array"]))
    }
    var posterAt: Double?
    switch fields["poster"] {
    case nil, .null?: break
    case .object(let poster)?
    where poster.keys.sorted() == ["at"] && poster["at"].flatMap(posterSeconds) != nil:
      posterAt = poster["at"].flatMap(posterSeconds)
    default:
      return .failure(
        Problems(list: [
          "\"poster\" must be {\"at\": SECONDS}, SECONDS a number from 0 to \(Int(maxPosterSeconds))"
        ]))
    }
    guard let limits = animationLimits(fields["animation"]) else {
      return .failure(
        Problems(list: [
          "\"animation\" must be {\"max_frames\": N, \"max_seconds\": S, \"preview_seconds\": P, \"fps\": F}, N an "
            + "integer from 1 to \(AnimationLimits.frameRange.upperBound), S a number above 0 and at most "
            + "\(Int(AnimationLimits.maxSecondsLimit)), P a number above 0 and at most "
            + "\(Int(AnimationLimits.maxPreviewSeconds)), F an integer from 1 to \(AnimationLimits.fpsRange.upperBound)"
        ]))
    }
    var problems: [String] = []
    var seen = Set<String>()
    var variants: [VariantSpec] = []
    for (index, item) in items.enumerated() {
      switch variant(item, number: index + 1, seen: &seen, limits: limits) {
      case .success(let spec): variants.append(spec)
      case .failure(let problem): problems.append(problem.list[0])
      }
    }
    return problems.isEmpty ? .success((variants, posterAt)) : .failure(Problems(list: problems))
  }

  private static func variant(
    _ item: SpecValue, number: Int, seen: inout Set<String>, limits: AnimationLimits
  ) -> Result<
    VariantSpec, Problems
  > {
    guard case .object(let rawFields) = item else {
      return .failure(Problems(list: ["variant #\(number): must be a JSON object"]))
    }
    let fields = rawFields.filter { $0.value != .null }
    let givenName: String? = if case .string(let text)? = fields["name"] { text } else { nil }
    let label = givenName.map { "variant '\($0)'" } ?? "variant #\(number)"
    func fail(_ why: String) -> Result<VariantSpec, Problems> {
      .failure(Problems(list: ["\(label): \(why)"]))
    }
    if let unknown = unknownKey(fields, known: variantKeys) {
      return fail("unknown key \"\(unknown)\" (known: \(known(variantKeys)))")
    }
    guard let name = givenName, isValidName(name) else {
      return fail("\"name\" must be 1-64 characters of a-z, 0-9, '_' or '-'")
    }
    guard seen.insert(name).inserted else { return fail("name is used twice") }
    guard let width = integer(fields["width"]), let height = integer(fields["height"]),
      (1...maxDimension).contains(width), (1...maxDimension).contains(height)
    else { return fail("\"width\" and \"height\" must be integers from 1 to \(maxDimension)") }
    guard let fit = choice(fields["fit"], default: Fit.inside) else {
      return fail("\"fit\" must be one of \(listed(Fit.self))")
    }
    guard let format = choice(fields["format"], default: VariantFormat.jpeg) else {
      return fail("\"format\" must be one of \(listed(VariantFormat.self))")
    }
    guard let quality = fields["quality"] == nil ? 82 : integer(fields["quality"]),
      (1...100).contains(quality)
    else { return fail("\"quality\" must be an integer from 1 to 100") }
    guard let subsampling = choice(fields["subsampling"], default: ChromaSubsampling.s420) else {
      return fail("\"subsampling\" must be one of \(listed(ChromaSubsampling.self))")
    }
    var progressive = false
    switch fields["progressive"] {
    case nil: break
    case .bool(let value)?: progressive = value
    default: return fail("\"progressive\" must be true or false")
    }
    if format != .jpeg && (fields["subsampling"] != nil || fields["progressive"] != nil) {
      return fail("\"subsampling\" and \"progressive\" apply to \"format\": \"jpeg\" only")
    }
    if format != .avif && fields["speed"] != nil {
      return fail("\"speed\" applies to \"format\": \"avif\" only")
    }
    guard let speed = fields["speed"] == nil ? VariantSpec.defaultAVIFSpeed : integer(fields["speed"]),
      (0...9).contains(speed)
    else { return fail("\"speed\" must be an integer from 0 to 9") }
    guard let crop = choice(fields["crop"], default: CropStrategy.centre) else {
      return fail("\"crop\" must be one of \(listed(CropStrategy.self))")
    }
    // Only a cover variant cuts anything away; on the others a crop would be silently meaningless.
    if fit != .cover && fields["crop"] != nil { return fail("\"crop\" applies to \"fit\": \"cover\" only") }
    var animated = false
    switch fields["animated"] {
    case nil: break
    case .bool(let value)?: animated = value
    default: return fail("\"animated\" must be true or false")
    }
    // Animated output is WebP's: AVIF sequences are not read by every browser that shows AVIF stills.
    if animated && format != .webp { return fail("\"animated\": true needs \"format\": \"webp\"") }
    return .success(
      VariantSpec(
        name: name, width: width, height: height, fit: fit, format: format, quality: quality,
        subsampling: subsampling, progressive: progressive, crop: crop, speed: speed,
        animation: animated ? limits : nil))
  }

  /// The profile's animation limits (the defaults for an absent or null `animation`), or nil when the
  /// value is not an object of valid limits.
  private static func animationLimits(_ value: SpecValue?) -> AnimationLimits? {
    guard let value, value != .null else { return .default }
    guard case .object(let rawFields) = value else { return nil }
    let fields = rawFields.filter { $0.value != .null }
    guard unknownKey(fields, known: animationKeys) == nil else { return nil }
    var limits = AnimationLimits.default
    if let frames = fields["max_frames"] {
      guard let count = integer(frames), AnimationLimits.frameRange.contains(count) else { return nil }
      limits.maxFrames = count
    }
    if let seconds = fields["max_seconds"] {
      guard case .number(let number) = seconds, number > 0, number <= AnimationLimits.maxSecondsLimit else {
        return nil
      }
      limits.maxSeconds = number
    }
    if let seconds = fields["preview_seconds"] {
      guard case .number(let number) = seconds, number > 0, number <= AnimationLimits.maxPreviewSeconds else {
        return nil
      }
      limits.previewSeconds = number
    }
    if let fps = fields["fps"] {
      guard let rate = integer(fps), AnimationLimits.fpsRange.contains(rate) else { return nil }
      limits.fps = rate
    }
    return limits
  }

  /// A poster time: a number from 0 to `maxPosterSeconds`.
  private static func posterSeconds(_ value: SpecValue) -> Double? {
    guard case .number(let seconds) = value, seconds >= 0, seconds <= maxPosterSeconds else { return nil }
    return seconds
  }

  static func isValidName(_ name: String) -> Bool {
    !name.isEmpty && name.unicodeScalars.count <= 64
      && name.unicodeScalars.allSatisfy {
        ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" || $0 == "-"
      }
  }

  /// The first unknown key in byte order (the database sorts them the same way).
  private static func unknownKey(_ fields: [String: SpecValue], known: Set<String>) -> String? {
    fields.keys.filter { !known.contains($0) }.min { Array($0.utf8).lexicographicallyPrecedes($1.utf8) }
  }

  private static func known(_ keys: Set<String>) -> String { keys.sorted().joined(separator: ", ") }

  private static func listed<T: CaseIterable & RawRepresentable<String>>(_: T.Type) -> String {
    T.allCases.map(\.rawValue).joined(separator: ", ")
  }

  /// A whole number (written `82`, `82.0` or `8.2e1` alike, as the database compares them), else nil.
  private static func integer(_ value: SpecValue?) -> Int? {
    guard case .number(let number)? = value, number == number.rounded(), abs(number) < 1e9 else { return nil }
    return Int(number)
  }

  /// The named case; `fallback` when the key is absent; nil for anything else.
  private static func choice<T: RawRepresentable<String>>(_ value: SpecValue?, default fallback: T) -> T? {
    switch value {
    case nil: return fallback
    case .string(let text)?: return T(rawValue: text)
    default: return nil
    }
  }
}

/// A JSON value, as a spec holds it: enough to say exactly which field has the wrong kind of value.
enum SpecValue: Decodable, Equatable {
  case null
  case bool(Bool)
  case number(Double)
  case string(String)
  case array([SpecValue])
  case object([String: SpecValue])

  init(from decoder: any Decoder) throws {
    let container = try decoder.singleValueContainer()
    if container.decodeNil() {
      self = .null
    } else if let value = try? container.decode(Bool.self) {
      self = .bool(value)
    } else if let value = try? container.decode(Double.self) {
      self = .number(value)
    } else if let value = try? container.decode(String.self) {
      self = .string(value)
    } else if let value = try? container.decode([SpecValue].self) {
      self = .array(value)
    } else {
      self = .object(try container.decode([String: SpecValue].self))
    }
  }
}
