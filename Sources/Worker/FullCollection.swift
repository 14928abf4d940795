import Foundation
public import Queue
public import Storage
import ThumbCore

/// What `thumbd gc` does: lists the collection candidates and the stored objects nothing names
/// (orphans: an upload whose job never recorded it, a crash between the two), and, unless it is a dry
/// run, makes the orphans older than the grace candidates and runs collection passes until nothing
/// more is due. Every delete goes through the same fenced passes as the workers' collectors, so it is
/// safe against a live fleet: an object something names again meanwhile is kept.
public struct FullCollection: Sendable {
  public let queue: JobQueue
  public let store: any ThumbnailStore
  public let graceSeconds: Double
  public let workerID: String

  public init(queue: JobQueue, store: any ThumbnailStore, graceSeconds: Double, workerID: String) {
    self.queue = queue
    self.store = store
    self.graceSeconds = graceSeconds
    self.workerID = workerID
  }

  public struct Orphan: Sendable, Equatable {
    public var key: String
    public var ageSeconds: Double
    /// Younger than the grace: left alone (its job may be about to record it).
    public var recent: Bool
  }

  public struct Report: Sendable {
    public var candidates: [CollectionCandidate] = []
    public var orphans: [Orphan] = []
    /// What the passes did (nil for a dry run).
    public var collected: CollectionPass.Report?
  }

  /// The orphans in storage: every page of the listing, checked against the database.
  public func orphans() async throws -> [Orphan] {
    var orphans: [Orphan] = []
    var after: String?
    let now = Date().timeIntervalSince1970
    repeat {
      let page = try await store.list(after: after, limit: 1000)
      let modified = Dictionary(page.objects.map { ($0.key, $0.modified) }, uniquingKeysWith: { a, _ in a })
      for key in try await queue.gcUnnamed(page.objects.map(\.key)) {
        let age = now - (modified[key] ?? now)
        orphans.append(Orphan(key: key, ageSeconds: age, recent: graceSeconds > 0 && age < graceSeconds))
      }
      after = page.next
    } while after != nil
    return orphans
  }

  public func run(dryRun: Bool, candidateLimit: Int = 10_000) async throws -> Report {
    var report = Report()
    report.candidates = try await queue.gcCandidates(limit: candidateLimit)
    report.orphans = try await orphans()
    if dryRun { return report }
    try await queue.gcAdopt(report.orphans.filter { !$0.recent }.map(\.key), graceSeconds: graceSeconds)
    var total = CollectionPass.Report()
    var settings = CollectionSettings(graceSeconds: graceSeconds)
    settings.fit(to: store, leaseSeconds: settings.claimSeconds)
    settings.maxPerPass = 10_000
    while true {
      let pass = try await CollectionPass(queue: queue, store: store, workerID: workerID, settings: settings)
        .run()
      total.marked += pass.marked
      total.kept += pass.kept
      total.deleted += pass.deleted
      total.failed += pass.failed
      total.events += pass.events
      total.deletedKeys += pass.deletedKeys
      total.firstFailure = total.firstFailure ?? pass.firstFailure
      if pass.deleted < settings.maxPerPass { break }
    }
    report.collected = total
    return report
  }
}
