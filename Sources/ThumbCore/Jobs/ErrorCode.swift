/// The stable vocabulary stored in `thumbs.jobs.error_code` (CONTRACT.md). Operators filter on these
/// strings, so a case is never renamed; new ones may be added.
public enum ErrorCode: String, Sendable, CaseIterable, Codable {
  case notFound = "not_found"
  case httpError = "http_error"
  case fetchFailed = "fetch_failed"
  case timeout = "timeout"
  case tooLarge = "too_large"
  case blockedSource = "blocked_source"
  case unsupportedFormat = "unsupported_format"
  case corruptImage = "corrupt_image"
  case overMemoryBudget = "over_memory_budget"
  case storageFailed = "storage_failed"
  /// The storage turned the worker's request down for a reason no retry cures: credentials, permissions,
  /// a missing bucket. The configuration's fault, not the job's: the job is queued again without using
  /// an attempt, and the worker logs it loudly (docs/operations.md, "Storage").
  case storageRefused = "storage_refused"
  /// A worker held the job past its lease without finishing (crashed, frozen, partitioned).
  case leaseExpired = "lease_expired"
  /// A bug or an unexpected library failure: retried, since it may not recur.
  case internalError = "internal_error"
  /// The job names a profile whose spec is invalid (fix the profile, then thumbs.retry).
  case invalidProfile = "invalid_profile"
  /// A presigned source URL that the origin refused after it expired: enqueue a fresh URL of the object.
  case sourceExpired = "source_expired"

  /// Permanent errors fail the job at once: trying again would give the same answer.
  public var isPermanent: Bool {
    switch self {
    case .notFound, .httpError, .tooLarge, .blockedSource, .unsupportedFormat, .corruptImage,
      .overMemoryBudget, .invalidProfile, .sourceExpired:
      return true
    case .fetchFailed, .timeout, .storageFailed, .storageRefused, .leaseExpired, .internalError:
      return false
    }
  }
}

/// An error that ends a job's attempt, already classified for the queue.
public struct JobError: Error, Sendable, Equatable, CustomStringConvertible {
  public var code: ErrorCode
  public var message: String
  /// The source asked not to be asked again for this many seconds (Retry-After longer than the fetch
  /// stage waits inside an attempt): the queue's retry comes no sooner.
  public var retryNotBeforeSeconds: Double?
  /// What the original was, when the attempt read enough of it to know it was a video: a failed job's
  /// row and event say so too.
  public var media: MediaInfo?

  public init(
    _ code: ErrorCode, _ message: String, retryNotBeforeSeconds: Double? = nil, media: MediaInfo? = nil
  ) {
    self.code = code
    self.message = message
    self.retryNotBeforeSeconds = retryNotBeforeSeconds
    self.media = media
  }

  public var description: String { "\(code.rawValue): \(message)" }
}

extension Result where Failure == JobError {
  /// The outcome of an async call that throws a JobError (Result(catching:) takes no async closure).
  public init(_ body: () async throws(JobError) -> Success) async {
    do { self = .success(try await body()) } catch { self = .failure(error) }
  }
}
