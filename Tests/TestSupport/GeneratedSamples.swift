public import Foundation

/// A folder of files a Tests/Support script made, with the `manifest.json` that says what each must
/// become: how the generated matrices read their cases and files.
public enum GeneratedSamples {
  /// The manifest's cases; empty when the folder could not be made or its manifest read.
  public static func cases<Case: Decodable>(in folder: URL?) -> [Case] {
    guard let folder, let data = try? Data(contentsOf: folder.appendingPathComponent("manifest.json")) else {
      return []
    }
    return (try? JSONDecoder().decode([Case].self, from: data)) ?? []
  }

  public static func bytes(_ name: String, in folder: URL?) throws -> [UInt8] {
    guard let folder else { throw CocoaError(.fileNoSuchFile) }
    return [UInt8](try Data(contentsOf: folder.appendingPathComponent(name)))
  }
}
