import Foundation
import Hashing
public import ThumbCore

/// Where thumbnails go. Keys are content-addressed (`ab/cd/<sha256>.jpg`): the same bytes always get the
/// same key, so a repeated or duplicated write is harmless and stored objects never change (CDN-friendly).
///
/// Errors are classified: `storage_refused` when the storage turned the request down for a reason no
/// retry cures (credentials, permissions, a missing bucket: the configuration), `storage_failed` when it
/// failed in a way a later try may not (5xx, throttling, a reset connection), after retries.
public protocol ThumbnailStore: Sendable {
  /// Stores `bytes` under `key`, unless an object is already there (identical, by content addressing).
  func put(key: String, bytes: [UInt8], contentType: String) async throws(JobError) -> PutAnswer
  /// Proves at start-up that the worker can write here: throws `storage_refused` when it cannot, in one
  /// line naming the place and the storage's own error code. Transient failures are retried by the
  /// caller.
  func check() async throws(JobError)
  /// Deletes the object at `key` (collection, once nothing live names it). An object already gone is no
  /// error. Errors are classified as for `put`.
  func delete(key: String) async throws(JobError)
  /// The object at `key`, nil when there is none (a collected one): for the console, which shows
  /// thumbnails without handing the browser a URL to the storage.
  func get(key: String) async throws(JobError) -> [UInt8]?
  /// A page of the stored objects whose keys are content-addressed (`StorageKey.contentHash`), in key
  /// order, after `key` (nil: from the start): what `thumbd gc` compares with what the database names.
  func list(after key: String?, limit: Int) async throws(JobError) -> StoredObjects
  /// Where a key can be found, for people (a path or a URL).
  func location(of key: String) -> String
  /// The place itself, without credentials: `file:///dir` or `s3://bucket/prefix` (plus the endpoint when
  /// it is not AWS's). Renders are reused only from the same place.
  var identity: String { get }
  /// The longest one `put` or `delete` may take, retries included, before it gives up (0: it does not
  /// wait on anything but the local disk). Collection sizes its claims from it.
  var longestOperationSeconds: Double { get }
}

/// One page of a listing.
public struct StoredObjects: Sendable, Equatable {
  public var objects: [StoredObject]
  /// Where the next page starts (`list(after:)`); nil: this was the last.
  public var next: String?

  public init(objects: [StoredObject], next: String?) {
    self.objects = objects
    self.next = next
  }
}

public struct StoredObject: Sendable, Equatable {
  public var key: String
  /// When it was written (seconds since 1970).
  public var modified: Double

  public init(key: String, modified: Double) {
    self.key = key
    self.modified = modified
  }
}

/// What a put did.
public enum PutAnswer: Sendable, Equatable {
  case uploaded
  /// An object with the key was already there: nothing was sent.
  case alreadyStored
}

public enum StorageKey {
  public static func contentAddressed(_ bytes: [UInt8], fileExtension: String) -> String {
    let hex = Digest.sha256Hex(bytes)
    let start = hex.startIndex
    let a = hex[start..<hex.index(start, offsetBy: 2)]
    let b = hex[hex.index(start, offsetBy: 2)..<hex.index(start, offsetBy: 4)]
    return "\(a)/\(b)/\(hex).\(fileExtension)"
  }

  /// The SHA-256 a content-addressed key names (nil for other keys).
  public static func contentHash(of key: String) -> String? {
    let name = key.split(separator: "/").last.map { $0.split(separator: ".").first.map(String.init) ?? "" }
    guard let name, name.count == 64, name.utf8.allSatisfy({ isHexDigit($0) }) else { return nil }
    return name
  }

  private static func isHexDigit(_ c: UInt8) -> Bool { (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) }
}
