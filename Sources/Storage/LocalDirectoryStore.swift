public import Blocking
public import Foundation
public import ThumbCore

/// A local directory. Each file is written to a temporary name in its final folder, flushed, and renamed:
/// a reader (or a crash) never sees half a thumbnail. Blocking file calls run on the pool.
public struct LocalDirectoryStore: ThumbnailStore {
  public let root: URL
  let pool: BlockingPool

  public init(root: URL, pool: BlockingPool) {
    self.root = root
    self.pool = pool
  }

  public var identity: String { "file://\(root.path)" }

  public func location(of key: String) -> String { root.appendingPathComponent(key).path }

  public func put(key: String, bytes: [UInt8], contentType: String) async throws(JobError) -> StoreOutcome {
    let final = root.appendingPathComponent(key)
    return try await pool.run { () throws(JobError) -> StoreOutcome in
      if FileManager.default.fileExists(atPath: final.path) { return .alreadyStored }
      try Self.store(bytes, at: final)
      return .uploaded
    }
  }

  /// Writes and removes a file in the root: the directory exists (or can be made) and is writable.
  public func check() async throws(JobError) {
    let probe = root.appendingPathComponent(".thumbd-check-\(getpid())")
    try await pool.run { () throws(JobError) in
      try Self.store(Array("thumbd storage check\n".utf8), at: probe)
      unlink(probe.path)
    }
  }

  static func store(_ bytes: [UInt8], at final: URL) throws(JobError) {
    let folder = final.deletingLastPathComponent()
    let temporary = folder.appendingPathComponent(".tmp-\(UUID().uuidString)")
    var failure: Int32 = 0
    do {
      try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    } catch {
      failure = ((error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError).map { Int32($0.code) } ?? EIO
      throw classify(failure, "creating \(folder.path)")
    }
    let fd = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw classify(errno, "writing \(final.path)") }
    bytes.withUnsafeBytes { raw in
      var offset = 0
      while offset < raw.count {
        let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
        if n < 0 {
          if errno == EINTR { continue }
          failure = errno
          return
        }
        offset += n
      }
    }
    if failure == 0, fsync(fd) != 0 { failure = errno }
    close(fd)
    if failure == 0, rename(temporary.path, final.path) != 0 { failure = errno }
    if failure != 0 {
      unlink(temporary.path)
      throw classify(failure, "writing \(final.path)")
    }
  }

  /// No permission and a read-only file system are the configuration's doing; a full disk or an I/O
  /// error may pass.
  static func classify(_ code: Int32, _ what: String) -> JobError {
    let reason = String(cString: strerror(code))
    switch code {
    case EACCES, EPERM, EROFS, ENOTDIR:
      return JobError(.storageRefused, "\(what): \(reason)")
    default:
      return JobError(.storageFailed, "\(what): \(reason)")
    }
  }
}
