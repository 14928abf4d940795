import Blocking
import Foundation
import Imaging
import Queue
import Storage
import TestSupport
import Testing
import ThumbCore
import Worker

/// Superseded thumbnails (migrations/0015): when an edit or a re-render replaces a photo's current
/// thumbnails, the objects no current thumbnail names any longer are collected after the grace, like a
/// forgotten photo's, while the job history keeps its rows.
@Suite(.serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)))
struct SupersededTests {
  let database: String
  let storage: URL
  let origin: TestOrigin

  init() throws {
    let root = try makeTemporaryDirectory()
    var image = PixelBuffer(width: 640, height: 480, channels: 3)
    for (index, name) in ["original", "edited", "other"].enumerated() {
      for i in 0..<image.pixels.count { image.pixels[i] = UInt8(truncatingIfNeeded: i / (3 + index)) }
      try Data(try JPEG.encode(image, quality: 85)).write(to: root.appendingPathComponent("\(name).jpg"))
    }
    database = try TestDatabase.create()
    storage = try makeTemporaryDirectory()
    origin = try TestOrigin(root: root)
  }

  func enqueue(_ name: String, as externalID: String) throws {
    try sql(
      database, "SELECT thumbs.enqueue($1, external_id => $2)", [origin.url("/files/\(name)"), externalID])
  }

  func stored() throws -> Set<String> {
    let files =
      FileManager.default.enumerator(at: storage, includingPropertiesForKeys: nil)?
      .compactMap { $0 as? URL }.filter { !$0.hasDirectoryPath } ?? []
    let root = storage.resolvingSymlinksInPath().path + "/"
    return Set(files.map { $0.resolvingSymlinksInPath().path.replacingOccurrences(of: root, with: "") })
  }

  func current() throws -> Set<String> {
    Set(try sql(database, "SELECT storage_key FROM thumbs.current_variants").rows.map { $0[0]! })
  }

  func collect(grace: Double) async throws -> CollectionPass.Report {
    let pool = BlockingPool(threads: 2, name: "superseded-test")
    defer { pool.shutdown() }
    let queue = JobQueue(client: try await PostgresClient(conninfo: database, pool: pool))
    defer { queue.client.close() }
    var settings = CollectionSettings(graceSeconds: grace)
    settings.fenceWaitSeconds = 5
    return try await CollectionPass(
      queue: queue, store: LocalDirectoryStore(root: storage, pool: pool), workerID: "test",
      settings: settings
    ).run()
  }

  @Test func anEditedPhotoLeavesExactlyItsCurrentObjectsAndItsHistory() async throws {
    try enqueue("original.jpg", as: "photo-1")
    try enqueue("other.jpg", as: "photo-2")
    _ = try await drainQueue(databaseURL: database, storage: storage)
    let before = try current()
    let storedBefore = try stored()
    // Three objects a photo: its large and medium variants are the same bytes (a 640x480 original is not
    // enlarged), one object.
    #expect(before.count == 6 && storedBefore == before)

    try enqueue("edited.jpg", as: "photo-1")  // the user cropped the photo
    _ = try await drainQueue(databaseURL: database, storage: storage)
    let after = try current()
    let superseded = before.subtracting(after)
    #expect(superseded.count == 3, "every variant of the edited photo changed")
    // Candidates at once; nothing goes before the grace.
    #expect(
      try sql(database, "SELECT reason, count(*) FROM thumbs.gc_objects WHERE state = 'pending' GROUP BY 1")
        .rows
        == [["superseded", "3"]])
    #expect(try await collect(grace: 3600).deleted == 0)
    #expect(try stored() == after.union(superseded))

    let pass = try await collect(grace: 0)
    #expect(Set(pass.deletedKeys) == superseded)
    #expect(try stored() == after, "exactly the current objects are left")
    // The history is still readable: both jobs of photo-1 with their variants; a row whose object no
    // current thumbnail names is one whose object is gone.
    let history = try sql(
      database,
      """
      SELECT j.id, count(*),
             count(*) FILTER (WHERE EXISTS (SELECT 1 FROM thumbs.current_variants c
                                             WHERE c.storage_key = v.storage_key))
        FROM thumbs.jobs j JOIN thumbs.variants v ON v.job_id = j.id
       WHERE j.external_id = 'photo-1' GROUP BY j.id ORDER BY j.id
      """
    ).rows.map { [$0[1]!, $0[2]!] }
    #expect(history == [["4", "0"], ["4", "4"]])
  }

  @Test func anObjectAnotherPhotoStillNamesIsKept() async throws {
    // Two photos of the same bytes share their (content-addressed) objects; editing one keeps them for
    // the other.
    try enqueue("original.jpg", as: "photo-1")
    try sql(
      database, "SELECT thumbs.enqueue($1 || '?copy', external_id => 'photo-2')",
      [origin.url("/files/original.jpg")])
    _ = try await drainQueue(databaseURL: database, storage: storage)
    let shared = try current()
    #expect(shared.count == 3)
    try enqueue("edited.jpg", as: "photo-1")
    _ = try await drainQueue(databaseURL: database, storage: storage)
    let pass = try await collect(grace: 0)
    #expect(pass.deleted == 0 && pass.kept == 3, "\(pass)")
    let (left, now) = (try stored(), try current())
    #expect(left == now && left.isSuperset(of: shared))
  }
}
