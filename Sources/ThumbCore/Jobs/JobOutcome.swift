/// What one job's attempt came to, with what it made: one value from the decision (`HeldJobs`) to the
/// statement that writes it (Queue's `JobQueue.recordOutcomes`). `Made` is what a success leaves
/// behind (Queue's `JobResult`: its variants, ThumbHash, render key, ...).
public enum JobOutcome<Made> {
  case succeeded(Made)
  /// `retryAfter` nil: failed for good. Otherwise queued again, due after that many seconds.
  case failed(JobError, retryAfter: Double?)
  /// Failed through no fault of the job (the worker's storage refused it): queued again after
  /// `retryAfter` seconds, the attempt not counted, the error and the attempt logged.
  case deferred(JobError, retryAfter: Double)
  /// Returned unfinished by a stopping worker: queued again at once, the attempt not counted.
  case handedBack
}

extension JobOutcome: Sendable where Made: Sendable {}
extension JobOutcome: Equatable where Made: Equatable {}
