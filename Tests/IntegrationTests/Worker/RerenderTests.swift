import Blocking
import Foundation
import Imaging
import Queue
import Storage
import TestSupport
import Testing
import ThumbCore
import Worker

/// Re-rendering after a change of a profile's spec (thumbs.rerender): stale photos get low-priority
/// jobs, a success replaces their current thumbnails (the superseded objects are collected after the
/// grace), a failure keeps them, and the events say which jobs were re-renders.
@Suite(.serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)))
struct RerenderTests {
  struct Fixture {
    let database: String
    let storage: URL
    let origin: TestOrigin
    let root: URL

    func enqueue(_ name: String, externalID: String?) throws -> String {
      try sql(
        database, "SELECT thumbs.enqueue($1, external_id => $2)", [origin.url("/files/\(name)"), externalID]
      ).rows[0][0]!
    }

    func drain(concurrency: Int = 2) async throws -> WorkerTotals {
      try await drainQueue(databaseURL: database, storage: storage, concurrency: concurrency)
    }

    func current(_ externalID: String) throws -> [String: String] {
      Dictionary(
        uniqueKeysWithValues: try sql(
          database, "SELECT name, storage_key FROM thumbs.current_variants WHERE external_id = $1",
          [externalID]
        ).rows.map { ($0[0]!, $0[1]!) })
    }

    /// The small variant's quality changes: its objects change, the others' do not.
    func changeSpec(quality: Int) throws {
      try sql(
        database,
        "UPDATE thumbs.profiles SET spec = jsonb_set(spec, '{variants,2,quality}', to_jsonb($1::int)) WHERE name = 'default'",
        ["\(quality)"])
    }
  }

  func fixture(photos: Int) throws -> Fixture {
    let root = try makeTemporaryDirectory()
    var image = PixelBuffer(width: 640, height: 480, channels: 3)
    for photo in 0..<photos {
      for i in 0..<image.pixels.count { image.pixels[i] = UInt8(truncatingIfNeeded: i / (3 + photo)) }
      try Data(try JPEG.encode(image, quality: 85)).write(to: root.appendingPathComponent("p\(photo).jpg"))
    }
    return Fixture(
      database: try TestDatabase.create(), storage: try makeTemporaryDirectory(),
      origin: try TestOrigin(root: root), root: root)
  }

  @Test func aChangedSpecReRendersTheStalePhotosAndReplacesTheirThumbnails() async throws {
    let fixture = try fixture(photos: 2)
    for photo in 0..<2 { _ = try fixture.enqueue("p\(photo).jpg", externalID: "photo-\(photo)") }
    _ = try await fixture.drain()
    let before = try fixture.current("photo-0")
    #expect(try sql(fixture.database, "SELECT thumbs.rerender('default')").rows[0][0] == "0", "nothing stale")

    try fixture.changeSpec(quality: 70)
    #expect(
      try sql(
        fixture.database, "SELECT stale, queued FROM thumbs.rerender_overview WHERE profile = 'default'"
      )
      .rows == [["2", "0"]])
    #expect(
      try sql(fixture.database, "SELECT thumbs.rerender('default', 1)").rows[0][0] == "1", "a batch of one")
    #expect(try sql(fixture.database, "SELECT thumbs.rerender('default', 1)").rows[0][0] == "1")
    #expect(try sql(fixture.database, "SELECT thumbs.rerender('default', 1)").rows[0][0] == "0", "each once")
    let queued = try sql(
      fixture.database,
      "SELECT priority, rerender, external_id FROM thumbs.jobs WHERE state = 'queued' ORDER BY external_id"
    ).rows
    #expect(queued == [["-1000", "t", "photo-0"], ["-1000", "t", "photo-1"]])

    _ = try await fixture.drain()
    let after = try fixture.current("photo-0")
    #expect(after["small"] != before["small"], "the changed variant was made again")
    #expect(after["large"] == before["large"], "the others are the same bytes, the same objects")
    #expect(
      try sql(
        fixture.database, "SELECT stale, succeeded FROM thumbs.rerender_overview WHERE profile = 'default'"
      )
      .rows == [["0", "2"]])
    #expect(try sql(fixture.database, "SELECT thumbs.rerender('default')").rows[0][0] == "0")
    let events = try sql(
      fixture.database,
      "SELECT payload->>'rerender' FROM thumbs.events WHERE kind = 'succeeded' ORDER BY id"
    ).rows.map { $0[0]! }
    #expect(events == ["false", "false", "true", "true"], "the events say which jobs were re-renders")

    // The superseded objects go after the grace, the job history kept; the current ones stay.
    let pool = BlockingPool(threads: 2, name: "rerender-test")
    let queue = JobQueue(client: try await PostgresClient(conninfo: fixture.database, pool: pool))
    defer { queue.client.close() }
    var settings = CollectionSettings(graceSeconds: 0)
    settings.fenceWaitSeconds = 5
    let pass = try await CollectionPass(
      queue: queue, store: LocalDirectoryStore(root: fixture.storage, pool: pool), workerID: "test",
      settings: settings
    ).run()
    #expect(pass.deleted == 2, "each photo's superseded small variant: \(pass.deletedKeys)")
    #expect(pass.deletedKeys.contains(before["small"]!))
    #expect(
      !FileManager.default.fileExists(atPath: fixture.storage.appendingPathComponent(before["small"]!).path))
    for key in try fixture.current("photo-0").values {
      #expect(FileManager.default.fileExists(atPath: fixture.storage.appendingPathComponent(key).path))
    }
  }

  @Test func aFailedReRenderKeepsTheCurrentThumbnailsAndIsNotQueuedAgainForTheSameSpec() async throws {
    let fixture = try fixture(photos: 1)
    _ = try fixture.enqueue("p0.jpg", externalID: "photo-0")
    _ = try await fixture.drain()
    let before = try fixture.current("photo-0")
    try FileManager.default.removeItem(at: fixture.root.appendingPathComponent("p0.jpg"))
    try fixture.changeSpec(quality: 71)
    #expect(try sql(fixture.database, "SELECT thumbs.rerender('default')").rows[0][0] == "1")
    let run = try await fixture.drain()
    #expect(run.failed == 1)
    #expect(try fixture.current("photo-0") == before, "a failed re-render keeps the current thumbnails")
    #expect(
      try sql(
        fixture.database,
        "SELECT payload->>'rerender', payload->>'error_code' FROM thumbs.events WHERE kind = 'failed'"
      )
      .rows == [["true", "not_found"]])
    #expect(try sql(fixture.database, "SELECT thumbs.rerender('default')").rows[0][0] == "0")
    #expect(
      try sql(
        fixture.database, "SELECT stale, failed FROM thumbs.rerender_overview WHERE profile = 'default'"
      ).rows
        == [["1", "1"]])
    // Another change of the spec makes it worth trying again.
    try fixture.changeSpec(quality: 72)
    #expect(try sql(fixture.database, "SELECT thumbs.rerender('default')").rows[0][0] == "1")
  }

  @Test func aFreshUploadIsLeasedBeforeTheReRenders() async throws {
    let fixture = try fixture(photos: 4)
    for photo in 0..<3 { _ = try fixture.enqueue("p\(photo).jpg", externalID: "photo-\(photo)") }
    _ = try await fixture.drain()
    try fixture.changeSpec(quality: 73)
    #expect(try sql(fixture.database, "SELECT thumbs.rerender('default')").rows[0][0] == "3")
    let fresh = try fixture.enqueue("p3.jpg", externalID: "fresh")
    _ = try await fixture.drain(concurrency: 1)
    let order = try sql(
      fixture.database,
      "SELECT id FROM thumbs.jobs WHERE started_at IS NOT NULL AND rerender OR id = $1::bigint "
        + "ORDER BY started_at", [fresh]
    ).rows.map { $0[0]! }
    #expect(order.first == fresh, "the fresh upload went first: \(order)")
  }
}
