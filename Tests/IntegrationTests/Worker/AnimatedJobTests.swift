import Foundation
import Queue
import TestSupport
import Testing
import ThumbCore

/// An animated GIF through a worker: a profile's `"animated": true` variant is stored as an animated
/// WebP of the GIF's frames, beside the profile's stills; the default profile of the same GIF gets its
/// shown frame only. One download serves both jobs.
@Suite(
  .serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)),
  .enabled(if: GIFMatrix.isAvailable, Comment(rawValue: GIFMatrix.skipReason)))
struct AnimatedJobTests {
  @Test func anAnimatedVariantIsStoredAsAnAnimatedWebP() async throws {
    let database = try TestDatabase.create()
    let storage = try makeTemporaryDirectory()
    let origin = try TestOrigin(root: try #require(GIFMatrix.folder))
    try sql(
      database,
      """
      INSERT INTO thumbs.profiles (name, spec) VALUES ('moving', '{"animation": {"max_frames": 30},
        "variants": [{"name": "moving", "width": 160, "height": 160, "format": "webp", "animated": true},
                     {"name": "still", "width": 160, "height": 160, "format": "webp"}]}')
      """)
    let url = origin.url("/files/motion.gif")
    try sql(database, "SELECT thumbs.enqueue($1, 'moving')", [url])
    try sql(database, "SELECT thumbs.enqueue($1)", [url])
    let totals = try await drainQueue(databaseURL: database, storage: storage)
    #expect(totals.succeeded == 2)
    let rows = try sql(
      database,
      "SELECT j.profile, v.name, v.format, v.width::text, v.height::text, v.storage_key"
        + " FROM thumbs.variants v JOIN thumbs.jobs j ON j.id = v.job_id WHERE j.profile = 'moving' ORDER BY v.name"
    ).rows
    #expect(
      rows.map { [$0[1], $0[2], $0[3], $0[4]] } == [
        ["moving", "webp", "160", "90"], ["still", "webp", "160", "90"],
      ])
    let moving = webPChunks(
      [UInt8](try Data(contentsOf: storage.appendingPathComponent(try #require(rows[0][5])))))
    let still = webPChunks(
      [UInt8](try Data(contentsOf: storage.appendingPathComponent(try #require(rows[1][5])))))
    // The animation: its ANIM chunk, then a frame chunk for each frame that changes something (the ball
    // moves in every one of the 24).
    #expect(moving.first == "VP8X" && moving.contains("ANIM"), "\(moving)")
    #expect(moving.filter { $0 == "ANMF" }.count == 24, "\(moving)")
    #expect(!still.contains("ANIM"), "\(still)")
    let sent = try await origin.count(at: "/_bytes/files/motion.gif", key: "bytes")
    #expect(sent == (try GIFMatrix.bytes("motion.gif")).count, "one download: \(sent) bytes sent")
  }
}
