import Logging
import ServiceLifecycle
import Storage
public import ThumbCore

/// Proves at start-up that the worker can write to its storage, before it leases anything. A refusal
/// (credentials, permissions, a missing bucket) ends the worker with one line naming the place and the
/// storage's error code: no restart would cure it. A storage that does not answer is waited for, as the
/// database is, and the worker is not ready meanwhile.
struct StorageCheck: Service {
  let store: any ThumbnailStore
  let readiness: Readiness
  let logger: Logger

  func run() async throws {
    let backoff = Backoff()
    try await cancelWhenGracefulShutdown { () async throws in
      var failures = 0
      while !Task.isCancelled {
        let failure: JobError
        do throws(JobError) {
          try await store.check()
          readiness.storageCheckPassed()
          logger.info("storage is writable", metadata: ["storage": "\(store.identity)"])
          return
        } catch {
          failure = error
        }
        if failure.code == .storageRefused { throw StorageRefused(error: failure) }
        failures += 1
        let delay = backoff.delay(afterFailures: failures)
        logger.warning(
          "storage unreachable, will retry",
          metadata: [
            "storage": "\(store.identity)", "error": "\(failure.message)", "try": "\(failures)",
            "retry.after_seconds": "\(delay.inSeconds)",
          ])
        try await Task.sleep(for: delay)
      }
    }
  }
}

/// The storage refused the start-up check: the worker stops, with this as its one line.
public struct StorageRefused: Error, CustomStringConvertible {
  public let error: JobError

  public var description: String { "storage refused: \(error.message)" }
}
