import ThumbCore

/// What the pure schedules are told, read from the one configuration value: each is derived here, in
/// one place, rather than kept as a copy.
extension WorkerConfig {
  /// The producer's pacing: how many jobs at once, how many per lease, the poll, the stop's grace.
  var pacing: ProducerPacing.Settings {
    var settings = ProducerPacing.Settings(
      concurrency: concurrency, leaseBatch: effectiveLeaseBatch, drain: drain,
      pollInterval: .seconds(pollInterval), shutdownGrace: .seconds(shutdownGrace))
    settings.ahead = effectiveLeaseAhead
    settings.reclaimWindow = .seconds(leaseSeconds)
    return settings
  }

  /// The keeper's rounds: heartbeats by the lease, housekeeping, queue sampling.
  var keeperSchedule: KeeperSchedule.Settings {
    KeeperSchedule.Settings(
      leaseSeconds: leaseSeconds, housekeepingSeconds: housekeepingInterval,
      sampleSeconds: queueSampleInterval, promoteSeconds: pollInterval)
  }

  /// The held jobs' rules: the job slots and the retry policy.
  func heldJobs<Work, Made>() -> HeldJobs<Work, Made>.Settings {
    var settings = HeldJobs<Work, Made>.Settings(slots: concurrency)
    settings.retryPolicy = retryPolicy
    return settings
  }
}
