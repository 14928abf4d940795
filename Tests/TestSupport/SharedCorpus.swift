public import Foundation

/// The photos in ../shared/corpus (beside the checkout, in CI and on developer machines; not in a user's
/// clone). Tests that need them are skipped, with this reason, when it is absent.
public enum SharedCorpus {
  public static let root: URL? = {
    if let env = ProcessInfo.processInfo.environment["THUMBD_SHARED_CORPUS"] {
      return URL(fileURLWithPath: env)
    }
    let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent()
    let corpus = repo.deletingLastPathComponent().appendingPathComponent("shared/corpus")
    return FileManager.default.fileExists(atPath: corpus.path) ? corpus : nil
  }()

  public static var isAvailable: Bool { root != nil }
  public static let skipReason = "../shared/corpus is absent (set THUMBD_SHARED_CORPUS): corpus tests skipped"

  public static func bytes(_ path: String) throws -> [UInt8] {
    guard let root else { throw CocoaError(.fileNoSuchFile) }
    return [UInt8](try Data(contentsOf: root.appendingPathComponent(path)))
  }
}
