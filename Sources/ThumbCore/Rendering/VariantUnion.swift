/// The variants of several jobs' profiles, rendered from one decode of their shared original. Variants
/// that differ only in name (the same box, fit, crop, format and encoding in two profiles) are rendered once.
public struct VariantUnion: Sendable, Equatable {
  /// What to render: each distinct variant once, named `u0`, `u1`, ...
  public let specs: [VariantSpec]
  /// For each member, in its own order: its variant's name and the index of that variant in `specs`.
  public let members: [[Entry]]

  public struct Entry: Sendable, Equatable {
    public var name: String
    public var index: Int
  }

  public init(_ profiles: [[VariantSpec]]) {
    var specs: [VariantSpec] = []
    var members: [[Entry]] = []
    for variants in profiles {
      members.append(
        variants.map { variant in
          var unnamed = variant
          unnamed.name = "u\(specs.count)"
          if let found = specs.firstIndex(where: { Self.sameOutput($0, variant) }) {
            return Entry(name: variant.name, index: found)
          }
          specs.append(unnamed)
          return Entry(name: variant.name, index: specs.count - 1)
        })
    }
    self.specs = specs
    self.members = members
  }

  /// Whether two variants make the same bytes: everything but the name.
  static func sameOutput(_ a: VariantSpec, _ b: VariantSpec) -> Bool {
    a.width == b.width && a.height == b.height && a.fit == b.fit && a.format == b.format
      && a.quality == b.quality && a.subsampling == b.subsampling && a.progressive == b.progressive
      && a.crop == b.crop && a.speed == b.speed && a.animation == b.animation
  }
}
