import Foundation
import Logging
public import Queue
import ServiceLifecycle
public import Storage
public import ThumbCore

/// The statements a collection pass runs (SQL/gc_*.sql, in that order): the queue's (`JobQueue`), or
/// a test's own.
public protocol CollectionStatements: Sendable {
  func gcMark(graceSeconds: Double, batch: Int) async throws(PostgresError) -> (marked: Int, kept: Int)
  @discardableResult func gcFence() async throws(PostgresError) -> Int
  func gcClaim(workerID: String, batch: Int, claimSeconds: Double) async throws(PostgresError) -> [String]
  func gcWaiting() async throws(PostgresError) -> Int
  @discardableResult func gcDeleted(_ keys: [String]) async throws(PostgresError) -> Int
  @discardableResult func gcFailed(
    _ failures: [(key: String, error: String, retryAfter: Double)]
  ) async throws(PostgresError) -> Int
  @discardableResult func gcSettle(batch: Int) async throws(PostgresError) -> Int
}

extension JobQueue: CollectionStatements {}

/// Deletes from storage, every `--gc-interval`, the objects that nothing live names any more: a
/// forgotten photo's, a pruned job's, an upload whose job's outcome was refused (migrations/0013 says
/// how the database keeps a reuse or an upload from racing a delete).
///
/// One pass: candidates past `--erase-grace` are marked (or kept, when something names them), the marks
/// are fenced, and once every job leased before the fence has ended the marked objects are claimed,
/// deleted (a few at a time) and recorded; erasures that are done get their `forgotten` events. Every
/// worker runs passes; SKIP LOCKED shares the work, and a claim of a killed worker runs out and is taken
/// again. A pass deletes at most `CollectionSettings.maxPerPass` objects: the rest wait for the next.
struct Collector: Service, WithServiceContext {
  let queue: any CollectionStatements
  let store: any ThumbnailStore
  let context: ServiceContext
  let activity: ServiceActivity.Reporter

  func run() async throws {
    let wake = WakeSignal()
    let ending = OneShot<Void>()
    await withGracefulShutdownHandler {
      guard config.gcIntervalSeconds > 0 else {
        activity.awaiting("its turn to stop (collection is off)")
        await ending.value
        return
      }
      activity.awaiting("the worker's start")
      guard await readiness.waitUntilStarted() else {
        await ending.value
        return
      }
      var settings = CollectionSettings(graceSeconds: config.eraseGraceSeconds)
      // A claim lasts about as long as a job's lease: a collector killed or cut off mid-pass holds up
      // the erasures waiting on its objects no longer than a dead worker holds up its jobs.
      settings.fit(to: store, leaseSeconds: config.leaseSeconds)
      // Workers started together do not all collect at once.
      var wait = Double.random(in: 0..<min(config.gcIntervalSeconds, 5))
      while !ending.isResolved {
        activity.awaiting("its next pass in \(Int(wait)) s")
        await wake.wait(timeout: wait)
        if ending.isResolved { break }
        await runPass(settings, stopping: { ending.isResolved })
        wait = config.gcIntervalSeconds * Double.random(in: 0.9...1.1)
      }
    } onGracefulShutdown: {
      ending.resolve(())
      wake.signal()
    }
  }

  private func runPass(_ settings: CollectionSettings, stopping: @escaping @Sendable () -> Bool) async {
    activity.awaiting("a collection pass")
    let pass = CollectionPass(
      queue: queue, store: store, workerID: config.workerID, settings: settings, stopping: stopping)
    do {
      let report = try await pass.run()
      metrics.collected(deleted: report.deleted, failed: report.failed)
      if report.deleted > 0 || report.failed > 0 || report.events > 0 {
        logger.info(
          "collected storage objects nothing names",
          metadata: [
            "gc.deleted": "\(report.deleted)", "gc.kept": "\(report.kept)", "gc.failed": "\(report.failed)",
            "gc.forgotten_events": "\(report.events)",
          ])
      }
      if let failure = report.firstFailure {
        logger.log(
          level: failure.code == .storageRefused ? .error : .warning,
          "storage did not delete objects; collection tries them again later",
          metadata: ["error.code": "\(failure.code.rawValue)", "error.message": "\(failure.message)"])
      }
    } catch {
      logger.warning("collection pass failed; the next one takes over", metadata: ["error": "\(error)"])
    }
  }
}

/// How collection paces itself.
public struct CollectionSettings: Sendable {
  /// A candidate waits this long before it may be marked (`--erase-grace`).
  public var graceSeconds: Double
  /// Objects marked or claimed, and erasures settled, per statement.
  public var batch = 100
  /// Deletes in flight at once.
  public var concurrency = 8
  /// Objects one pass deletes at most; the rest wait for the next pass.
  public var maxPerPass = 2000
  /// A claim this old is taken to belong to a dead collector, and another collector takes its objects.
  public var claimSeconds = 60.0
  /// The longest one delete may take (ThumbnailStore.longestOperationSeconds). A pass starts no delete
  /// later than this, plus a margin, before its claim runs out: a delete still going when another
  /// collector has taken the object, deleted it and recorded it could remove the same content stored
  /// again by a job leased after that record.
  public var storageOperationSeconds = 0.0

  /// How long after its claim a pass may still start deleting the claimed objects.
  public var deleteWindowSeconds: Double { claimSeconds - storageOperationSeconds - 5 }

  /// Claims of a lease TTL, and long enough that the delete window is at least the longest delete plus
  /// 5 s (on S3, whose requests give up after 30 s: 70 s).
  public mutating func fit(to store: any ThumbnailStore, leaseSeconds: Double) {
    storageOperationSeconds = store.longestOperationSeconds
    claimSeconds = max(leaseSeconds, 2 * storageOperationSeconds + 10)
  }
  /// How long a pass waits for the jobs leased before its fence to end.
  public var fenceWaitSeconds = 30.0
  /// An object the storage did not delete is tried again after this long.
  public var retrySeconds = 30.0

  public init(graceSeconds: Double) {
    self.graceSeconds = graceSeconds
  }
}

/// One collection pass: the statements of SQL/gc_*.sql in order, and the deletes between them. The
/// worker's collector runs one every `--gc-interval`; `thumbd gc` runs one on demand.
public struct CollectionPass: Sendable {
  let queue: any CollectionStatements
  let store: any ThumbnailStore
  let workerID: String
  let settings: CollectionSettings
  let stopping: @Sendable () -> Bool

  public init(
    queue: any CollectionStatements, store: any ThumbnailStore, workerID: String,
    settings: CollectionSettings,
    stopping: @escaping @Sendable () -> Bool = { false }
  ) {
    self.queue = queue
    self.store = store
    self.workerID = workerID
    self.settings = settings
    self.stopping = stopping
  }

  public struct Report: Sendable, Equatable {
    public var marked = 0
    public var kept = 0
    public var deleted = 0
    public var failed = 0
    public var events = 0
    public var deletedKeys: [String] = []
    public var firstFailure: JobError?
  }

  public func run() async throws(PostgresError) -> Report {
    var report = Report()
    while true {
      let (marked, kept) = try await queue.gcMark(graceSeconds: settings.graceSeconds, batch: settings.batch)
      report.marked += marked
      report.kept += kept
      if marked + kept < settings.batch || report.marked >= settings.maxPerPass { break }
    }
    try await queue.gcFence()
    let deadline = ContinuousClock.now + .seconds(settings.fenceWaitSeconds)
    while report.deleted + report.failed < settings.maxPerPass, !stopping() {
      let claimed = ContinuousClock.now
      let keys = try await queue.gcClaim(
        workerID: workerID, batch: settings.batch, claimSeconds: settings.claimSeconds)
      if keys.isEmpty {
        // Nothing claimable: jobs leased before the fence may still run; wait for them a while.
        if ContinuousClock.now >= deadline { break }
        if try await queue.gcWaiting() == 0 { break }
        try? await Task.sleep(for: .milliseconds(250))
        continue
      }
      // Objects whose delete could not start within the window stay claimed until the claim runs out.
      let (deleted, failures) = await delete(keys, startBy: claimed + .seconds(settings.deleteWindowSeconds))
      try await queue.gcDeleted(deleted)
      try await queue.gcFailed(failures.map { ($0.key, $0.error.message, settings.retrySeconds) })
      report.deleted += deleted.count
      report.deletedKeys += deleted
      report.failed += failures.count
      report.firstFailure = report.firstFailure ?? failures.first?.error
    }
    while true {
      let events = try await queue.gcSettle(batch: settings.batch)
      report.events += events
      if events < settings.batch { break }
    }
    return report
  }

  /// Deletes the objects, `settings.concurrency` at a time, none started after `startBy`.
  private func delete(
    _ keys: [String], startBy: ContinuousClock.Instant
  ) async -> (deleted: [String], failed: [(key: String, error: JobError)]) {
    let store = self.store
    return await withTaskGroup(of: (String, JobError?).self) { group in
      var next = keys.makeIterator()
      func add() -> Bool {
        guard ContinuousClock.now < startBy, let key = next.next() else { return false }
        group.addTask {
          do throws(JobError) {
            try await store.delete(key: key)
            return (key, nil)
          } catch {
            return (key, error)
          }
        }
        return true
      }
      for _ in 0..<settings.concurrency {
        if !add() { break }
      }
      var deleted: [String] = []
      var failed: [(key: String, error: JobError)] = []
      for await (key, error) in group {
        if let error { failed.append((key, error)) } else { deleted.append(key) }
        _ = add()
      }
      return (deleted.sorted(), failed)
    }
  }
}
