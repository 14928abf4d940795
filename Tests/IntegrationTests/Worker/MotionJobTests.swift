import Foundation
import Queue
import TestSupport
import Testing
import ThumbCore

/// Motion through a worker: both halves of a Live Photo, uploaded as two jobs of one owner, carry the
/// same `live_photo_id` and `thumbs.live_photos` pairs them for the backend's role (a half without its
/// partner, or under another owner, is not paired); Motion Photos in each layout get `media.motion`;
/// a file lying about its clip succeeds as a still with a warning in its row and event.
@Suite(
  .serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)),
  .enabled(if: MotionSamples.isAvailable, Comment(rawValue: MotionSamples.skipReason)))
struct MotionJobTests {
  @Test func liveHalvesArePairedAndMotionPhotosDescribed() async throws {
    let folder = try #require(MotionSamples.folder, "motion-samples.py failed")
    let deployment = try RolesTests().deployment()
    let database = deployment.owner
    let origin = try TestOrigin(root: folder)
    let jobs: [(file: String, owner: String?, external: String)] = [
      ("live-still.jpg", "ann", "ann-1"), ("live.mov", "ann", "ann-1-motion"),
      ("live-still.jpg", "bob", "bob-1"),  // bob's MOV never came: no pair
      ("live.mov", nil, "anon-motion"),  // the same identifier, another owner: no pair
      ("google-container.jpg", "ann", "ann-2"), ("samsung-trailer.jpg", "ann", "ann-3"),
      ("samsung-mpvd.heic", "ann", "ann-4"), ("google-container-too-long.jpg", "ann", "ann-5"),
    ]
    for job in jobs {
      try sql(
        deployment.enqueuer, "SELECT thumbs.enqueue($1, external_id => $2, owner => $3)",
        [origin.url("/files/\(job.file)?for=\(job.external)"), job.external, job.owner])
    }
    let storage = try makeTemporaryDirectory()
    let totals = try await drainQueue(databaseURL: database, storage: storage)
    #expect(totals.succeeded == jobs.count, "\(totals)")
    let samples = Dictionary(uniqueKeysWithValues: MotionSamples.cases.map { ($0.name, $0) })
    let rows = try sql(
      database,
      "SELECT external_id, state, media->>'kind', media->>'live_photo_id', media->'motion'->>'offset',"
        + " media->'motion'->>'length', media->'motion'->>'codec', warnings->0->>'code' FROM thumbs.jobs"
    ).rows
    let byExternal = Dictionary(uniqueKeysWithValues: rows.map { ($0[0]!, $0) })
    let identifier = samples["live.mov"]?.livePhotoID
    #expect(byExternal["ann-1"]?[2] == "image" && byExternal["ann-1"]?[3] == identifier)
    #expect(byExternal["ann-1-motion"]?[2] == "video" && byExternal["ann-1-motion"]?[3] == identifier)
    for (external, file) in [
      ("ann-2", "google-container.jpg"), ("ann-3", "samsung-trailer.jpg"),
      ("ann-4", "samsung-mpvd.heic"),
    ] {
      let sample = try #require(samples[file])
      let row = try #require(byExternal[external])
      #expect(row[2] == "image" && row[4] == sample.offset.map(String.init), "\(row)")
      #expect(row[5] == sample.length.map(String.init) && row[6] == sample.codec, "\(row)")
    }
    #expect(byExternal["ann-5"]?[2] == nil && byExternal["ann-5"]?[7] == RenderWarning.motionUnreadable)
    let event = try sql(
      database,
      "SELECT payload->'media'->'motion'->>'duration_ms', payload->'warnings'->0->>'code' FROM thumbs.events"
        + " e JOIN thumbs.jobs j ON j.id = e.job_id WHERE j.external_id IN ('ann-2', 'ann-5')"
        + " ORDER BY j.external_id"
    ).rows
    #expect(event.count == 2 && Int(event[0][0] ?? "") ?? 0 > 2900 && event[1][1] == "motion_unreadable")
    // The backend's role reads the pairs.
    let pairs = try sql(
      deployment.enqueuer,
      "SELECT owner, live_photo_id, still_external_id, video_external_id FROM thumbs.live_photos"
    ).rows
    #expect(pairs == [["ann", identifier, "ann-1", "ann-1-motion"]], "\(pairs)")
    // An owner's pairs come from the two partial indexes (asked of a table too small to need them, so
    // that a sequential scan is ruled out, as a large table would).
    let connection = try PostgresConnection(conninfo: database)
    defer { connection.close() }
    try connection.execute(script: "SET enable_seqscan = off")
    let plan = try connection.query(
      "EXPLAIN (COSTS OFF) SELECT * FROM thumbs.live_photos WHERE owner = 'ann'", []
    ).rows.map { $0[0] ?? "" }.joined(separator: "\n")
    #expect(plan.contains("jobs_live_photo_idx") && plan.contains("jobs_live_video_idx"), "\(plan)")
    #expect(!plan.contains("Seq Scan"), "\(plan)")
  }

  /// A profile with a still and an animated variant: an 8 s 1080p video read by ranges from its
  /// origin gets its poster and a 3 s preview from it (the window's samples read, not the whole file),
  /// a Motion Photo a preview of its clip; both stills stay JPEGs.
  @Test func previewsOfAVideoAndAMotionPhoto() async throws {
    let folder = try makeTemporaryDirectory()
    let (status, output) = try runProgram(
      "/usr/bin/ffmpeg",
      [
        "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=1920x1080:rate=30:duration=8", "-c:v",
        "libx264",
        "-preset", "veryfast", "-g", "30", "-pix_fmt", "yuv420p",
        folder.appendingPathComponent("clip.mp4").path,
      ])
    try #require(status == 0, "ffmpeg: \(output)")
    try Data(try MotionSamples.bytes("google-container.jpg")).write(
      to: folder.appendingPathComponent("mp.jpg"))
    let database = try TestDatabase.create()
    try sql(
      database,
      """
      INSERT INTO thumbs.profiles (name, spec) VALUES ('motion', '{"variants": [
        {"name": "still", "width": 320, "height": 320},
        {"name": "moving", "width": 320, "height": 320, "format": "webp", "animated": true}]}')
      """)
    let origin = try TestOrigin(root: folder)
    for name in ["clip.mp4", "mp.jpg"] {
      try sql(
        database, "SELECT thumbs.enqueue($1, 'motion', external_id => $2)",
        [origin.url("/files/\(name)"), name])
    }
    let storage = try makeTemporaryDirectory()
    let totals = try await drainQueue(databaseURL: database, storage: storage)
    #expect(totals.succeeded == 2, "\(totals)")
    let rows = try sql(
      database,
      "SELECT j.external_id, v.name, v.format, v.width::text, v.height::text, v.storage_key FROM thumbs.variants v"
        + " JOIN thumbs.jobs j ON j.id = v.job_id ORDER BY j.external_id, v.name"
    ).rows
    #expect(
      rows.map { [$0[0], $0[1], $0[2], $0[3], $0[4]] } == [
        ["clip.mp4", "moving", "webp", "320", "180"], ["clip.mp4", "still", "jpeg", "320", "180"],
        ["mp.jpg", "moving", "webp", "320", "240"], ["mp.jpg", "still", "jpeg", "320", "240"],
      ], "\(rows)")
    for row in rows where row[1] == "moving" {
      let tags = webPChunks(
        [UInt8](try Data(contentsOf: storage.appendingPathComponent(try #require(row[5])))))
      // 3 s at 10 frames a second: 30 frames, each different (the pattern moves).
      #expect(tags.contains("ANIM") && tags.filter { $0 == "ANMF" }.count >= 25, "\(row[0] ?? ""): \(tags)")
    }
    let size = try FileManager.default.attributesOfItem(
      atPath: folder.appendingPathComponent("clip.mp4").path)[.size]
    let sent = try await origin.count(at: "/_bytes/files/clip.mp4", key: "bytes")
    #expect(
      sent < (size as? Int ?? 0) * 3 / 4, "the video's window, not all of it: \(sent) of \(size ?? 0) bytes")
  }
}
