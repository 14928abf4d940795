import Blocking
import Foundation
import Imaging
import Queue
import Storage
import TestSupport
import Testing
import ThumbCore
import Worker

/// Forgetting a photo (thumbs.forget, thumbs.forget_external) and collecting what nothing live names,
/// against a real directory store: shared objects stay while something names them, and go when the
/// last photo naming them is forgotten; the job history can be pruned without losing a current
/// thumbnail.
@Suite(.serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)))
struct ForgetTests {
  struct Fixture {
    let database: String
    let storage: URL
    let origin: TestOrigin
    let pool = BlockingPool(threads: 4, name: "forget-test")

    var store: LocalDirectoryStore { LocalDirectoryStore(root: storage, pool: pool) }

    func queue() async throws -> JobQueue {
      JobQueue(client: try await PostgresClient(conninfo: database, pool: pool))
    }

    /// A collection pass with no grace, as a worker's collector runs it.
    func collect() async throws -> CollectionPass.Report {
      let queue = try await queue()
      defer { queue.client.close() }
      var settings = CollectionSettings(graceSeconds: 0)
      settings.fenceWaitSeconds = 5
      return try await CollectionPass(
        queue: queue, store: store, workerID: "test-collector", settings: settings
      )
      .run()
    }

    func enqueue(_ name: String, externalID: String?) throws -> String {
      try sql(
        database, "SELECT thumbs.enqueue($1, external_id => $2)", [origin.url("/files/\(name)"), externalID]
      ).rows[0][0]!
    }

    func drain() async throws -> WorkerTotals {
      try await drainQueue(databaseURL: database, storage: storage)
    }

    /// Every object in the store (content-addressed files).
    func storedKeys() throws -> Set<String> {
      var keys = Set<String>()
      let enumerator = FileManager.default.enumerator(atPath: storage.path)
      while let path = enumerator?.nextObject() as? String {
        if StorageKey.contentHash(of: path) != nil { keys.insert(path) }
      }
      return keys
    }

    func keys(_ statement: String, _ parameters: [String?] = []) throws -> Set<String> {
      Set(try sql(database, statement, parameters).rows.map { $0[0]! })
    }
  }

  func fixture() throws -> Fixture {
    let root = try makeTemporaryDirectory()
    var image = PixelBuffer(width: 900, height: 600, channels: 3)
    for i in 0..<image.pixels.count { image.pixels[i] = UInt8(truncatingIfNeeded: i / 5) }
    let photo = Data(try JPEG.encode(image, quality: 85))
    try photo.write(to: root.appendingPathComponent("a.jpg"))
    try photo.write(to: root.appendingPathComponent("b.jpg"))
    for i in 0..<image.pixels.count { image.pixels[i] = UInt8(truncatingIfNeeded: i / 3) }
    try Data(try JPEG.encode(image, quality: 85)).write(to: root.appendingPathComponent("edited.jpg"))
    return Fixture(
      database: try TestDatabase.create(), storage: try makeTemporaryDirectory(),
      origin: try TestOrigin(root: root))
  }

  @Test func sharedObjectsStayUntilTheLastPhotoNamingThemIsForgotten() async throws {
    let fixture = try fixture()
    let first = try fixture.enqueue("a.jpg", externalID: "photo-a")
    _ = try await fixture.drain()
    let second = try fixture.enqueue("b.jpg", externalID: "photo-b")
    let reused = try await fixture.drain()
    #expect(reused.reusedRenders == 1, "the second photo took the first one's objects")
    let shared = try fixture.keys("SELECT storage_key FROM thumbs.variants")
    #expect(shared.count == 4)
    #expect(try fixture.storedKeys() == shared)

    #expect(try sql(fixture.database, "SELECT thumbs.forget($1::bigint)", [first]).rows[0][0] == "t")
    #expect(try sql(fixture.database, "SELECT thumbs.forget($1::bigint)", [first]).rows[0][0] == "f")
    let scrubbed = try sql(
      fixture.database,
      "SELECT state, source_url, thumbhash, render_key, metadata::text FROM thumbs.jobs WHERE id = $1::bigint",
      [first]
    ).rows[0]
    #expect(scrubbed == ["forgotten", nil, nil, nil, "{}"])
    #expect(
      try fixture.keys("SELECT storage_key FROM thumbs.current_variants WHERE external_id = 'photo-a'")
        .isEmpty)
    #expect(
      try sql(fixture.database, "SELECT count(*) FROM thumbs.originals WHERE url LIKE '%/a.jpg'").rows[0][0]
        == "0")

    let kept = try await fixture.collect()
    #expect(kept.deleted == 0 && kept.kept == 4, "photo-b still names every object")
    #expect(try fixture.storedKeys() == shared)
    let firstEvent = try sql(
      fixture.database,
      "SELECT job_id, external_id, payload->'storage_keys' FROM thumbs.events WHERE kind = 'forgotten'"
    ).rows
    #expect(firstEvent == [[first, "photo-a", "[]"]], "the erasure is done, and deleted nothing")

    #expect(try sql(fixture.database, "SELECT thumbs.forget_external('photo-b')").rows[0][0] == "1")
    let collected = try await fixture.collect()
    #expect(collected.deleted == 4)
    #expect(try fixture.storedKeys().isEmpty, "nothing of the photo remains in storage")
    let secondEvent = try sql(
      fixture.database,
      "SELECT job_id, payload->'storage_keys' FROM thumbs.events WHERE kind = 'forgotten' AND external_id = 'photo-b'"
    ).rows
    #expect(secondEvent.count == 1 && secondEvent[0][0] == second)
    let listed = try JSONSerialization.jsonObject(with: Data(secondEvent[0][1]!.utf8)) as? [String]
    #expect(Set(listed ?? []) == shared, "the event lists every key deleted")

    // In the database: the scrubbed job rows and the events, nothing else of either photo.
    for (table, count) in [
      ("thumbs.variants", "0"), ("thumbs.photos", "0"), ("thumbs.photo_variants", "0"),
      ("thumbs.originals", "0"), ("thumbs.erasures", "0"), ("thumbs.erasure_keys", "0"),
      ("thumbs.jobs WHERE source_url IS NOT NULL OR thumbhash IS NOT NULL", "0"),
      ("thumbs.event_log WHERE source_url IS NOT NULL OR thumbhash IS NOT NULL", "0"),
      ("thumbs.jobs WHERE state = 'forgotten'", "2"),
    ] {
      #expect(try sql(fixture.database, "SELECT count(*) FROM \(table)").rows[0][0] == count, "\(table)")
    }
  }

  @Test func prunedHistoryLosesNoCurrentThumbnailAndTheSupersededOnesAreCollected() async throws {
    let fixture = try fixture()
    _ = try fixture.enqueue("a.jpg", externalID: "photo-c")
    _ = try await fixture.drain()
    let before = try fixture.keys("SELECT storage_key FROM thumbs.current_variants")
    // The photo is edited: a new original, new thumbnails.
    _ = try fixture.enqueue("edited.jpg", externalID: "photo-c")
    _ = try await fixture.drain()
    let current = try fixture.keys("SELECT storage_key FROM thumbs.current_variants")
    #expect(current.count == 4 && current.isDisjoint(with: before))
    #expect(try fixture.storedKeys() == current.union(before))

    // The whole history goes; the superseded objects become candidates, the current ones do not.
    #expect(try sql(fixture.database, "SELECT thumbs.prune('0 seconds')").rows[0][0] == "2")
    #expect(try fixture.keys("SELECT storage_key FROM thumbs.gc_objects WHERE state = 'pending'") == before)
    let pass = try await fixture.collect()
    #expect(pass.deleted == 4)
    #expect(try fixture.storedKeys() == current, "only the superseded objects went")
    #expect(try fixture.keys("SELECT storage_key FROM thumbs.current_variants") == current)

    // No job row is left, and the photo is still found by its external id.
    #expect(try sql(fixture.database, "SELECT count(*) FROM thumbs.jobs").rows[0][0] == "0")
    #expect(try sql(fixture.database, "SELECT thumbs.forget_external('photo-c')").rows[0][0] == "1")
    _ = try await fixture.collect()
    #expect(try fixture.storedKeys().isEmpty)
    let event = try sql(
      fixture.database, "SELECT payload->'storage_keys' FROM thumbs.events WHERE kind = 'forgotten'"
    ).rows
    let listed = try JSONSerialization.jsonObject(with: Data(event[0][0]!.utf8)) as? [String]
    #expect(Set(listed ?? []) == current)
    #expect(try sql(fixture.database, "SELECT thumbs.forget_external('photo-c')").rows[0][0] == "0")
  }

  @Test func aQueuedJobOfAForgottenPhotoNeverRunsAndWithinTheGraceNothingIsDeleted() async throws {
    let fixture = try fixture()
    _ = try fixture.enqueue("a.jpg", externalID: "photo-d")
    _ = try await fixture.drain()
    let stored = try fixture.storedKeys()
    let queued = try fixture.enqueue("edited.jpg", externalID: "photo-d")
    #expect(try sql(fixture.database, "SELECT thumbs.forget_external('photo-d')").rows[0][0] == "2")
    let after = try await fixture.drain()
    #expect(after.succeeded == 0 && after.failed == 0, "the queued job of the forgotten photo never ran")
    #expect(
      try sql(fixture.database, "SELECT state FROM thumbs.jobs WHERE id = $1::bigint", [queued]).rows[0][0]
        == "forgotten")

    // Within the grace, nothing goes.
    let queue = try await fixture.queue()
    defer { queue.client.close() }
    let early = try await CollectionPass(
      queue: queue, store: fixture.store, workerID: "test", settings: CollectionSettings(graceSeconds: 3600)
    ).run()
    #expect(early.marked == 0 && early.deleted == 0 && early.events == 0)
    #expect(try fixture.storedKeys() == stored)
    let candidates = try await queue.gcCandidates(limit: 10)
    #expect(candidates.count == 4 && candidates.allSatisfy { $0.reason == "forgotten" && !$0.named })
  }
}
