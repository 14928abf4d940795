import Fetch
import Logging
import ServiceLifecycle
import Storage
public import ThumbCore
import Transport

/// Proves at start-up that the worker can write to its storage and read its source buckets, before it
/// leases anything. A refusal (credentials, permissions, a missing bucket) ends the worker with one line
/// naming the place and the storage's error code: no restart would cure it. A storage that does not
/// answer is waited for, as the database is, and the worker is not ready meanwhile.
struct StorageCheck: Service {
  let store: any ThumbnailStore
  /// The buckets `s3://` originals are read from: each must answer a missing key as missing (so that a
  /// missing original is told from a refusal).
  let sources: S3Sources?
  let multi: CurlMulti
  let readiness: Readiness
  let logger: Logger
  let activity: ServiceActivity.Reporter

  /// Checks until the storage takes the write, then stays until the group stops: a service that ended
  /// by itself while the group was stopping would make the group cancel the others instead of stopping
  /// them in order (seen: a taken HTTP port then hung the worker now and then).
  func run() async throws {
    do {
      try await cancelWhenGracefulShutdown { try await checkUntilPassed() }
    } catch let refused as StorageRefused {
      throw refused
    } catch {
      return  // a stop came first
    }
    activity.awaiting("its turn to stop")
    try? await gracefulShutdown()
  }

  private func checkUntilPassed() async throws {
    let backoff = Backoff()
    var failures = 0
    while true {
      try Task.checkCancellation()
      activity.awaiting("the storage's answer to its write check (try \(failures + 1))")
      let failure: JobError
      do throws(JobError) {
        try await store.check()
        for bucket in (sources?.buckets ?? []).sorted() {
          try await sources?.checkBucket(bucket, multi: multi)
        }
        readiness.storageCheckPassed()
        logger.info(
          "storage is writable",
          metadata: [
            "storage": "\(store.identity)",
            "source_buckets": "\((sources?.buckets ?? []).sorted().joined(separator: ","))",
          ])
        return
      } catch {
        failure = error
      }
      if failure.code == .storageRefused { throw StorageRefused(error: failure) }
      failures += 1
      let delay = backoff.delay(afterFailures: failures)
      logger.warning(
        "storage or source bucket unreachable, will retry",
        metadata: [
          "storage": "\(store.identity)", "error": "\(failure.message)", "try": "\(failures)",
          "retry.after_seconds": "\(delay.inSeconds)",
        ])
      activity.awaiting("the next storage check")
      try await Task.sleep(for: delay)
    }
  }
}

/// The storage refused the start-up check: the worker stops, with this as its one line.
public struct StorageRefused: Error, CustomStringConvertible {
  public let error: JobError

  public var description: String { "storage refused: \(error.message)" }
}
