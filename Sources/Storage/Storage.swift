import CLibCrypto
public import Foundation
public import ThumbCore

/// Where thumbnails go. Keys are content-addressed (`ab/cd/<sha256>.jpg`): the same bytes always get the
/// same key, so a repeated or duplicated write is harmless and stored files never change (CDN-friendly).
public protocol ThumbnailStore: Sendable {
  /// Stores `bytes` under `key`; blocking, call from a BlockingPool.
  func put(key: String, bytes: [UInt8], contentType: String) throws(JobError)
  /// Where a key can be found, for people (a path or a URL).
  func location(of key: String) -> String
}

public enum StorageKey {
  public static func contentAddressed(_ bytes: [UInt8], fileExtension: String) -> String {
    let hex = sha256Hex(bytes)
    let start = hex.startIndex
    let a = hex[start..<hex.index(start, offsetBy: 2)]
    let b = hex[hex.index(start, offsetBy: 2)..<hex.index(start, offsetBy: 4)]
    return "\(a)/\(b)/\(hex).\(fileExtension)"
  }

  public static func sha256Hex(_ bytes: [UInt8]) -> String {
    var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
    bytes.withUnsafeBufferPointer { src in _ = SHA256(src.baseAddress, src.count, &digest) }
    return digest.map { String(format: "%02x", $0) }.joined()
  }
}

/// Parses `--storage`: `file:///absolute/dir` (s3:// comes with the object-storage issue).
public enum StorageURL {
  public static func open(_ text: String) throws(JobError) -> any ThumbnailStore {
    guard let url = URL(string: text), let scheme = url.scheme?.lowercased() else {
      throw JobError(.storageFailed, "--storage '\(text)' is not a URL (file:///dir)")
    }
    switch scheme {
    case "file":
      guard url.path.hasPrefix("/") else {
        throw JobError(.storageFailed, "--storage needs an absolute file:/// path")
      }
      return LocalDirectoryStore(root: URL(fileURLWithPath: url.path))
    default:
      throw JobError(.storageFailed, "--storage scheme '\(scheme)' is not supported; use file:///dir")
    }
  }
}

/// A local directory. Each file is written to a temporary name in its final folder, flushed, and renamed:
/// a reader (or a crash) never sees half a thumbnail.
public struct LocalDirectoryStore: ThumbnailStore {
  public let root: URL

  public init(root: URL) {
    self.root = root
  }

  public func location(of key: String) -> String { root.appendingPathComponent(key).path }

  public func put(key: String, bytes: [UInt8], contentType: String) throws(JobError) {
    let final = root.appendingPathComponent(key)
    let folder = final.deletingLastPathComponent()
    let temporary = folder.appendingPathComponent(".tmp-\(UUID().uuidString)")
    do {
      try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
      let fd = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
      guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
      var ok = true
      bytes.withUnsafeBytes { raw in
        var offset = 0
        while offset < raw.count {
          let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
          if n < 0 {
            if errno == EINTR { continue }
            ok = false
            return
          }
          offset += n
        }
      }
      let synced = fsync(fd) == 0
      close(fd)
      guard ok, synced else {
        unlink(temporary.path)
        throw POSIXError(.EIO)
      }
      guard rename(temporary.path, final.path) == 0 else {
        unlink(temporary.path)
        throw POSIXError(.init(rawValue: errno) ?? .EIO)
      }
    } catch {
      throw JobError(.storageFailed, "writing \(final.path): \(error)")
    }
  }
}
