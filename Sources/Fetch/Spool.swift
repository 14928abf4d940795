import Foundation
import Glibc
import Synchronization
public import ThumbCore

/// Where a download too large to hold in memory goes: a video from an origin that does not answer
/// ranges. Its body is written to a file here as it arrives, and the parts a poster needs (the head,
/// the index, keyframes) are read from the file as a ranged read reads them from the origin; only
/// those parts count against the memory budget.
///
/// Each file is unlinked as soon as it is created: it lives as long as its descriptor, so a killed
/// worker leaves nothing behind. The bytes of every file open at once are bounded by `capacity` (the
/// disk the spool may use).
public final class Spool: Sendable {
  /// The directory the files are made in.
  public let directory: String
  /// The bytes all spooled files may hold at once, and so the largest one.
  public let capacity: Int
  private let inUse = Mutex(0)

  public init(directory: String, capacity: Int) {
    self.directory = directory
    self.capacity = capacity
  }

  /// Bytes held by the spool's files now (for tests and logs).
  public var bytesInUse: Int { inUse.withLock { $0 } }

  /// A spool directory that cannot be used: the worker does not start.
  public struct Unusable: Error, CustomStringConvertible {
    public var description: String
  }

  /// Creates the directory if it is missing, and checks a file can be made in it.
  public func prepare() throws(Unusable) {
    do {
      try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
      _ = try SpooledFile(in: self)
    } catch let error as JobError {
      throw Unusable(description: "--spool-dir: \(error.message)")
    } catch {
      throw Unusable(
        description:
          "--spool-dir: cannot create the spool directory \(directory): \(error.localizedDescription)")
    }
  }

  /// Counts `bytes` more against the capacity, if they fit.
  fileprivate func take(_ bytes: Int) -> Bool {
    inUse.withLock { used in
      guard used + bytes <= capacity else { return false }
      used += bytes
      return true
    }
  }

  fileprivate func give(_ bytes: Int) {
    inUse.withLock { $0 -= bytes }
  }
}

/// One spooled download: an unlinked file, written once as the body arrives, then read at offsets.
///
/// @unchecked Sendable: written only by the thread running its transfer; read (`pread`, which keeps
/// no file position) by any thread once the transfer ended.
public final class SpooledFile: @unchecked Sendable {
  private let descriptor: Int32
  private let spool: Spool
  /// Bytes written so far; the file's size once the transfer ended.
  public private(set) var size = 0
  /// Why a write failed (the disk is full, ...), for the transfer's error.
  private(set) var failure: String?
  /// The file alone is larger than the spool's capacity: no other try can succeed.
  private(set) var tooLarge = false

  init(in spool: Spool) throws(JobError) {
    self.spool = spool
    var template = Array("\(spool.directory)/thumbd-spool-XXXXXX".utf8CString)
    let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
    guard descriptor >= 0 else {
      throw JobError(
        .internalError, "cannot create a file in the spool directory \(spool.directory): \(Self.errnoText())")
    }
    // Unlinked at once: the descriptor keeps the file, and nothing is left behind when the process dies.
    template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
    _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
    self.descriptor = descriptor
  }

  /// Appends `count` bytes at `data`; false when they could not be written (`failure` says why).
  func append(_ data: UnsafeRawPointer, count: Int) -> Bool {
    guard spool.take(count) else {
      tooLarge = size + count > spool.capacity
      failure =
        tooLarge
        ? "larger than the \(ByteSize.format(spool.capacity)) spool (--max-spool-bytes)"
        : "the spool (--max-spool-bytes \(ByteSize.format(spool.capacity))) is full with other downloads"
      return false
    }
    var written = 0
    while written < count {
      let n = pwrite(descriptor, data + written, count - written, off_t(size + written))
      if n < 0 {
        if errno == EINTR { continue }
        failure = "cannot write to the spool directory \(spool.directory): \(Self.errnoText())"
        spool.give(count)
        return false
      }
      written += n
    }
    size += count
    return true
  }

  /// The bytes of `range` (fewer at the file's end).
  public func read(_ range: Range<Int>) throws(JobError) -> [UInt8] {
    let upper = min(range.upperBound, size)
    guard range.lowerBound < upper else { return [] }
    var bytes = [UInt8](repeating: 0, count: upper - range.lowerBound)
    var done = 0
    let failed = bytes.withUnsafeMutableBytes { buffer -> Bool in
      while done < buffer.count {
        let n = pread(
          descriptor, buffer.baseAddress! + done, buffer.count - done, off_t(range.lowerBound + done))
        if n < 0, errno == EINTR { continue }
        if n <= 0 { return true }
        done += n
      }
      return false
    }
    guard !failed else {
      throw JobError(.internalError, "cannot read the spooled original: \(Self.errnoText())")
    }
    return bytes
  }

  private static func errnoText() -> String { String(cString: strerror(errno)) }

  deinit {
    close(descriptor)
    spool.give(size)
  }
}
