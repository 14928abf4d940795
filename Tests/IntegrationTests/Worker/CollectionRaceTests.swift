import Foundation
import Imaging
import Logging
import Queue
import Storage
import TestSupport
import Testing
import ThumbCore
import Worker

/// Reuse racing deletion: two workers, each with its collector running every 0.1 s and no grace, render
/// round after round of photos whose originals are identical within a lane (so every round of a lane
/// names the same objects; ten lanes, each its own original, race side by side). Each round's photos
/// are enqueued while the previous round's are forgotten: their jobs find the objects in storage (a
/// HEAD that skips the upload) or take another job's variants (render reuse) just as collection deletes
/// them. After every round, every object something live names must be in storage; at the end, with
/// everything forgotten, nothing may be left. THUMBD_RACE_ROUNDS sets the number of rounds (all lanes
/// together; 1,000 by default).
@Suite(.serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)))
struct CollectionRaceTests {
  static let rounds = Int(ProcessInfo.processInfo.environment["THUMBD_RACE_ROUNDS"] ?? "") ?? 1000

  @Test func reuseRacingDeletionLosesNoObjectAndLeavesNothing() async throws {
    let lanes = 10
    let root = try makeTemporaryDirectory()
    var image = PixelBuffer(width: 96, height: 64, channels: 3)
    for lane in 0..<lanes {
      for i in 0..<image.pixels.count { image.pixels[i] = UInt8(truncatingIfNeeded: i * (7 + lane)) }
      try Data(try JPEG.encode(image, quality: 85)).write(to: root.appendingPathComponent("lane\(lane).jpg"))
    }
    let origin = try TestOrigin(root: root)
    let database = try TestDatabase.create()
    let storage = try makeTemporaryDirectory()

    let shutdowns = (0..<2).map { _ in ShutdownSignal() }
    let workers = shutdowns.enumerated().map { index, shutdown in
      var config = WorkerConfig(databaseURL: database, storageURL: "file://\(storage.path)")
      config.workerID = "race-\(index)"
      config.concurrency = 3
      config.addressPolicy = try! AddressPolicy(allowList: "127.0.0.1")
      config.pollInterval = 0.05
      config.eraseGraceSeconds = 0
      config.gcIntervalSeconds = 0.1
      var logger = Logger(label: "thumbd.race")
      logger.logLevel = .error
      return Task { try await Worker(config: config, shutdown: shutdown, logger: logger).run() }
    }
    defer { shutdowns.forEach { $0.request() } }

    func named() throws -> Set<String> {
      Set(
        try sql(
          database,
          "SELECT storage_key FROM thumbs.photo_variants UNION SELECT storage_key FROM thumbs.variants"
        ).rows.map { $0[0]! })
    }
    func stored(_ key: String) -> Bool {
      FileManager.default.fileExists(atPath: storage.appendingPathComponent(key).path)
    }

    let perRound = 3
    var missing: [String] = []
    let rounds = max(1, Self.rounds / lanes)
    func photo(_ lane: Int, _ round: Int, _ index: Int) -> String { "l\(lane)-r\(round)-p\(index)" }
    var random = SystemRandomNumberGenerator()
    for round in 0..<rounds {
      // Half the rounds enqueue before forgetting the round before (their jobs find the objects still
      // named, or named by nothing and marked); the other half forget first and enqueue a moment later
      // (0-150 ms), so that collection marks and deletes while the new jobs fetch, render and store.
      let enqueueFirst = Bool.random(using: &random)
      func enqueueRound() throws {
        for lane in 0..<lanes {
          for index in 0..<perRound {
            try sql(
              database, "SELECT thumbs.enqueue($1, external_id => $2)",
              [origin.url("/files/lane\(lane).jpg?r=\(round)&p=\(index)"), photo(lane, round, index)])
          }
        }
      }
      if enqueueFirst { try enqueueRound() }
      if round > 0 {
        for lane in 0..<lanes {
          for index in 0..<perRound {
            try sql(database, "SELECT thumbs.forget_external($1)", [photo(lane, round - 1, index)])
          }
        }
      }
      if !enqueueFirst {
        try await Task.sleep(for: .milliseconds(Int.random(in: 0..<150, using: &random)))
        try enqueueRound()
      }
      let done = try await eventually(timeout: 60) {
        try sql(database, "SELECT count(*) FROM thumbs.jobs WHERE state IN ('queued', 'running')").rows[0][0]
          == "0"
      }
      #expect(done, "round \(round) ended")
      // A named object found missing is looked at again: it counts if still named and still missing.
      let gone = try named().filter { !stored($0) }
      if !gone.isEmpty {
        try await Task.sleep(for: .milliseconds(200))
        let still = try named()
        missing += gone.filter { still.contains($0) && !stored($0) }
      }
      if !missing.isEmpty { break }
    }
    #expect(missing.isEmpty, "named objects missing: \(missing)")
    #expect(
      try sql(database, "SELECT count(*) FROM thumbs.jobs WHERE state = 'failed'").rows[0][0] == "0",
      "no job failed")

    // Everything forgotten: nothing of any photo may remain in storage.
    for lane in 0..<lanes {
      for index in 0..<perRound {
        try sql(database, "SELECT thumbs.forget_external($1)", [photo(lane, rounds - 1, index)])
      }
    }
    let collected = try await eventually(timeout: 60) {
      try sql(
        database,
        "SELECT (SELECT count(*) FROM thumbs.erasures) + (SELECT count(*) FROM thumbs.gc_objects WHERE state IS NOT NULL)"
      ).rows[0][0] == "0"
    }
    #expect(collected, "collection finished")
    let left =
      FileManager.default.enumerator(atPath: storage.path)?.allObjects.compactMap { $0 as? String }
      .filter { StorageKey.contentHash(of: $0) != nil } ?? []
    #expect(left.isEmpty, "left in storage: \(left)")
    let events = try sql(database, "SELECT count(*) FROM thumbs.events WHERE kind = 'forgotten'").rows[0][0]
    #expect(events == "\(rounds * lanes * perRound)", "one forgotten event per photo")
    let deletes = try sql(
      database,
      "SELECT count(*) FROM thumbs.events WHERE kind = 'forgotten' AND payload->'storage_keys' <> '[]'"
    ).rows[0][0]!
    // The race was run, not dodged: objects were deleted while later rounds were using them.
    #expect((Int(deletes) ?? 0) >= rounds, "erasures that deleted objects: \(deletes)")
    for shutdown in shutdowns { shutdown.request() }
    var refused = 0
    for worker in workers { refused += try await worker.value.retried }
    print(
      "collection race: \(rounds * lanes) rounds (\(lanes) lanes), \(refused) completions refused "
        + "(their jobs ran again), \(deletes) erasures deleted objects")
  }
}
