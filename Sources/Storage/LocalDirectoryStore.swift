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

  public var longestOperationSeconds: Double { 0 }

  public func location(of key: String) -> String { root.appendingPathComponent(key).path }

  public func put(key: String, bytes: [UInt8], contentType: String) async throws(JobError) -> PutAnswer {
    let final = root.appendingPathComponent(key)
    return try await pool.run { () throws(JobError) -> PutAnswer in
      if FileManager.default.fileExists(atPath: final.path) { return .alreadyStored }
      try Self.store(bytes, at: final)
      return .uploaded
    }
  }

  public func delete(key: String) async throws(JobError) {
    let path = root.appendingPathComponent(key).path
    try await pool.run { () throws(JobError) in
      switch SystemCall.run({ unlink(path) }) {
      case .success: return
      case .failure(let failure) where failure.code == ENOENT: return
      case .failure(let failure): throw Self.classify(failure.code, "deleting \(path)")
      }
    }
  }

  /// Reads the file of `key`; nil when there is none. A key that climbs out of the root (`..`) or is
  /// absolute names nothing here.
  public func get(key: String) async throws(JobError) -> [UInt8]? {
    let parts = key.split(separator: "/", omittingEmptySubsequences: false)
    guard !key.hasPrefix("/"), !parts.contains(where: { $0 == ".." || $0 == "." || $0.isEmpty }) else {
      return nil
    }
    let path = root.appendingPathComponent(key).path
    return try await pool.run { () throws(JobError) -> [UInt8]? in
      guard let handle = FileHandle(forReadingAtPath: path) else {
        if FileManager.default.fileExists(atPath: path) { throw Self.classify(EACCES, "reading \(path)") }
        return nil
      }
      defer { try? handle.close() }
      do {
        return Array(try handle.readToEnd() ?? Data())
      } catch {
        throw JobError(.storageFailed, "reading \(path): \(error.localizedDescription)")
      }
    }
  }

  /// Walks the two levels of folders (`ab/cd/`) in name order, so a page starts where the last ended
  /// without reading what came before.
  public func list(after key: String?, limit: Int) async throws(JobError) -> StoredObjects {
    let root = self.root
    return try await pool.run { () throws(JobError) -> StoredObjects in
      var objects: [StoredObject] = []
      let after = key ?? ""
      func names(_ folder: URL) throws(JobError) -> [String] {
        do {
          return try FileManager.default.contentsOfDirectory(atPath: folder.path).filter {
            !$0.hasPrefix(".")
          }.sorted()
        } catch let error as CocoaError where error.code == .fileReadNoSuchFile {
          return []
        } catch {
          throw JobError(.storageFailed, "listing \(folder.path): \(error.localizedDescription)")
        }
      }
      for first in try names(root) where first >= String(after.prefix(2)) {
        for second in try names(root.appendingPathComponent(first)) {
          let folder = "\(first)/\(second)"
          guard folder >= String(after.prefix(5)) else { continue }
          for name in try names(root.appendingPathComponent(folder)) {
            let key = "\(folder)/\(name)"
            guard key > after, StorageKey.contentHash(of: key) != nil else { continue }
            let path = root.appendingPathComponent(key).path
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
              let modified = attributes[.modificationDate] as? Date
            else { continue }
            objects.append(StoredObject(key: key, modified: modified.timeIntervalSince1970))
            if objects.count == limit { return StoredObjects(objects: objects, next: key) }
          }
        }
      }
      return StoredObjects(objects: objects, next: nil)
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
    if let failure = makeFolder(folder.path) { throw classify(failure.code, "creating \(folder.path)") }
    let fd: Int32
    switch SystemCall.run({ open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644) }) {
    case .success(let opened): fd = opened
    case .failure(let failure): throw classify(failure.code, "writing \(final.path)")
    }
    var result = bytes.withUnsafeBytes { raw -> Result<Int, SystemCall.Failure> in
      var offset = 0
      while offset < raw.count {
        switch SystemCall.run({ write(fd, raw.baseAddress! + offset, raw.count - offset) }) {
        case .success(let written): offset += written
        case .failure(let failure): return .failure(failure)
        }
      }
      return .success(offset)
    }
    if case .success = result { result = SystemCall.run { fsync(fd) }.map { Int($0) } }
    close(fd)
    if case .success = result {
      result = SystemCall.run { rename(temporary.path, final.path) }.map { Int($0) }
    }
    if case .failure(let failure) = result {
      unlink(temporary.path)
      throw classify(failure.code, "writing \(final.path)")
    }
  }

  /// Creates `path` and any missing parent: one call when it exists already (the usual case). A file
  /// where a folder should be fails with ENOTDIR here or at the open that follows.
  static func makeFolder(_ path: String) -> SystemCall.Failure? {
    switch SystemCall.run({ mkdir(path, 0o755) }) {
    case .success: return nil
    case .failure(let failure) where failure.code == EEXIST: return nil
    case .failure(let failure) where failure.code == ENOENT:
      let parent = (path as NSString).deletingLastPathComponent
      guard parent != path, !parent.isEmpty else { return failure }
      return makeFolder(parent) ?? makeFolder(path)
    case .failure(let failure): return failure
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
