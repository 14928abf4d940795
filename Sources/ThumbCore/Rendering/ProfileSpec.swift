public import Foundation

/// Reads and validates the JSON of `thumbs.profiles.spec`:
/// `{"variants": [{"name": "large", "width": 1600, "height": 1600, "fit": "inside", "format": "jpeg",
/// "quality": 82}, ...]}`. `fit` (inside, cover, fill) defaults to `inside`, `format` (jpeg, webp, png,
/// avif, auto) to `jpeg`, `quality` to 82, `subsampling` ("4:2:0" or "4:4:4", JPEG only) to "4:2:0",
/// `progressive` (JPEG only) to false, `speed` (0-9, AVIF only) to 8, `crop` (centre, attention, entropy; `fit: cover` only) to centre.
/// Unknown keys are refused, so a misspelt option is not ignored.
/// Every problem is reported with the variant and field it concerns, since operators write these by hand.
public enum ProfileSpec {
  public static let maxDimension = 8192

  public struct Invalid: Error, Sendable, CustomStringConvertible {
    public var profile: String
    public var reason: String
    public var description: String { "profile '\(profile)' is invalid: \(reason)" }
  }

  private struct RawSpec: Decodable {
    var variants: [RawVariant]?
  }

  private struct RawVariant: Decodable {
    var name: String?
    var width: Int?
    var height: Int?
    var fit: String?
    var format: String?
    var quality: Int?
    var subsampling: String?
    var progressive: Bool?
    var speed: Int?
    var crop: String?
  }

  static let variantKeys: Set<String> = [
    "name", "width", "height", "fit", "format", "quality", "subsampling", "progressive", "speed", "crop",
  ]

  public static func parse(name: String, json: Data) throws(Invalid) -> Profile {
    let raw: RawSpec
    do {
      raw = try JSONDecoder().decode(RawSpec.self, from: json)
    } catch {
      throw Invalid(profile: name, reason: "spec is not the expected JSON object (\(error))")
    }
    guard let rawVariants = raw.variants, !rawVariants.isEmpty else {
      throw Invalid(profile: name, reason: "spec needs a non-empty \"variants\" array")
    }
    let keySets =
      ((try? JSONSerialization.jsonObject(with: json)) as? [String: Any])?["variants"] as? [[String: Any]]
      ?? []
    for (index, keys) in keySets.enumerated() {
      let unknown = Set(keys.keys).subtracting(variantKeys).sorted()
      if let first = unknown.first {
        let label = (keys["name"] as? String).map { "variant '\($0)'" } ?? "variant #\(index + 1)"
        throw Invalid(
          profile: name,
          reason:
            "\(label): unknown key \"\(first)\" (known: \(variantKeys.sorted().joined(separator: ", ")))")
      }
    }
    var seen = Set<String>()
    var variants: [VariantSpec] = []
    for (index, v) in rawVariants.enumerated() {
      let label = v.name.map { "variant '\($0)'" } ?? "variant #\(index + 1)"
      func fail(_ why: String) -> Invalid { Invalid(profile: name, reason: "\(label): \(why)") }
      guard let variantName = v.name, isValidName(variantName) else {
        throw fail("\"name\" must be 1-64 characters of a-z, 0-9, '_' or '-'")
      }
      guard seen.insert(variantName).inserted else { throw fail("name is used twice") }
      guard let width = v.width, let height = v.height,
        (1...maxDimension).contains(width), (1...maxDimension).contains(height)
      else { throw fail("\"width\" and \"height\" must be integers from 1 to \(maxDimension)") }
      guard let fit = Fit(rawValue: v.fit ?? "inside") else {
        throw fail("\"fit\" must be one of \(Fit.allCases.map(\.rawValue).joined(separator: ", "))")
      }
      guard let format = VariantFormat(rawValue: v.format ?? "jpeg") else {
        throw fail(
          "\"format\" must be one of \(VariantFormat.allCases.map(\.rawValue).joined(separator: ", "))")
      }
      let quality = v.quality ?? 82
      guard (1...100).contains(quality) else { throw fail("\"quality\" must be from 1 to 100") }
      guard let subsampling = ChromaSubsampling(rawValue: v.subsampling ?? "4:2:0") else {
        throw fail(
          "\"subsampling\" must be one of \(ChromaSubsampling.allCases.map(\.rawValue).joined(separator: ", "))"
        )
      }
      if format != .jpeg && (v.subsampling != nil || v.progressive != nil) {
        throw fail("\"subsampling\" and \"progressive\" apply to \"format\": \"jpeg\" only")
      }
      if format != .avif && v.speed != nil { throw fail("\"speed\" applies to \"format\": \"avif\" only") }
      let speed = v.speed ?? VariantSpec.defaultAVIFSpeed
      guard (0...9).contains(speed) else { throw fail("\"speed\" must be from 0 to 9") }
      guard let crop = CropStrategy(rawValue: v.crop ?? "centre") else {
        throw fail("\"crop\" must be one of \(CropStrategy.allCases.map(\.rawValue).joined(separator: ", "))")
      }
      // Only a cover variant cuts anything away; on the others a crop would be silently meaningless.
      if fit != .cover && v.crop != nil { throw fail("\"crop\" applies to \"fit\": \"cover\" only") }
      variants.append(
        VariantSpec(
          name: variantName, width: width, height: height, fit: fit, format: format, quality: quality,
          subsampling: subsampling, progressive: v.progressive ?? false, crop: crop, speed: speed))
    }
    return Profile(name: name, variants: variants)
  }

  static func isValidName(_ name: String) -> Bool {
    !name.isEmpty && name.count <= 64
      && name.unicodeScalars.allSatisfy {
        ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" || $0 == "-"
      }
  }
}
