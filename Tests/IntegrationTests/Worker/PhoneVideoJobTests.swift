import Foundation
import Imaging
import TestSupport
import Testing
import ThumbCore

/// Phone videos through a worker with the default settings (a 256 MiB --memory-budget, two slots): 4K
/// HEVC 10-bit SDR and HLG, 4K60, a portrait clip turned by its matrix and 240 fps 1080p succeed, side
/// by side with a 12 MP HEIC, and the worker's peak RSS stays within the budget and 64 MiB; a video
/// whose prediction is over the whole budget fails before any decoding, says by how much, and says it
/// was a video.
@Suite(
  .serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)),
  .enabled(if: VideoMatrix.isAvailable, Comment(rawValue: VideoMatrix.skipReason)))
struct PhoneVideoJobTests {
  static let kinds = [
    "4k-hevc10.mov", "4k-hevc10-hlg.mov", "4k60-hevc10.mov", "4k-portrait-hevc10.mov", "1080p240-h264.mp4",
  ]

  @Test func phoneVideosSucceedUnderTheDefaultSettings() async throws {
    let folder = try #require(PhoneVideos.folder(kinds: Self.kinds), "phone-videos.py failed")
    // A 12 MP HEIC of noise, as large as a phone photo gets.
    let noise = folder.appendingPathComponent("noise.jpg")
    try Data(try makeNoiseJPEG(width: 4032, height: 3024)).write(to: noise)
    let heic = folder.appendingPathComponent("photo.heic")
    if !FileManager.default.fileExists(atPath: heic.path) {
      let (status, output) = try runProgram("/usr/bin/heif-enc", ["-q", "80", "-o", heic.path, noise.path])
      try #require(status == 0, "heif-enc: \(output)")
    }
    let database = try TestDatabase.create()
    let storage = try makeTemporaryDirectory()
    let origin = try TestOrigin(root: folder)
    let names = Self.kinds + ["photo.heic", "photo.heic"]
    for (index, name) in names.enumerated() {
      // The HEIC twice, at two URLs: two downloads and two decodes of it, beside the videos.
      try sql(database, "SELECT thumbs.enqueue($1)", [origin.url("/files/\(name)?copy=\(index)")])
    }
    let worker = try WorkerProcess(
      databaseURL: database, storage: storage, settings: ["THUMBD_CONCURRENCY": "2"])
    let settled = try await eventually(timeout: 300) {
      try sql(database, "SELECT count(*) FROM thumbs.jobs WHERE state IN ('succeeded', 'failed')").rows[0][0]
        == String(names.count)
    }
    #expect(settled, "\(worker.log)")
    let rows = try sql(
      database,
      "SELECT source_url, state, error_code, last_error, media->>'width', media->>'height',"
        + " media->>'dynamic_range' FROM thumbs.jobs ORDER BY id"
    ).rows
    for row in rows { #expect(row[1] == "succeeded", "\(row)") }
    let byName = Dictionary(rows.map { (URL(string: $0[0]!)!.lastPathComponent, $0) }) { first, _ in first }
    #expect(byName["4k-portrait-hevc10.mov"]?[4] == "2160" && byName["4k-portrait-hevc10.mov"]?[5] == "3840")
    #expect(byName["4k-hevc10-hlg.mov"]?[6] == "hlg" && byName["4k-hevc10.mov"]?[6] == "sdr")
    #expect(byName["photo.heic"]?[4] == nil)
    let peak = try #require(FaultyOriginWorkerTests.peakResidentKiB(worker.pid))
    print("worker VmHWM with 4K videos and 12 MP HEICs, two slots, the default budget: \(peak) KiB")
    #expect(peak < (256 + 64) * 1024, "peak RSS \(peak) KiB")
    worker.send(SIGTERM)
    #expect(await worker.waitForExit(timeout: 30) == 0)
  }

  @Test func aVideoOverTheWholeBudgetFailsBeforeDecodingAndSaysItWasAVideo() async throws {
    let folder = try makeTemporaryDirectory()
    let clip = folder.appendingPathComponent("8k.mp4")
    let (status, output) = try runProgram(
      "/usr/bin/ffmpeg",
      [
        "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=7680x4320:rate=30:duration=0.2", "-c:v",
        "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-level", "6.1", clip.path,
      ])
    try #require(status == 0, "ffmpeg: \(output)")
    let database = try TestDatabase.create()
    let storage = try makeTemporaryDirectory()
    let origin = try TestOrigin(root: folder)
    try sql(database, "SELECT thumbs.enqueue($1)", [origin.url("/files/8k.mp4")])
    let totals = try await drainQueue(databaseURL: database, storage: storage) {
      $0.memoryBudget = 96 * 1024 * 1024
    }
    #expect(totals.failed == 1)
    let row = try sql(
      database,
      "SELECT state, error_code, last_error, attempts, media->>'width', media->>'codec' FROM thumbs.jobs"
    ).rows[0]
    #expect(row[0] == "failed" && row[1] == "over_memory_budget" && row[3] == "1", "\(row)")
    #expect(row[2]?.contains("needs about") == true && row[2]?.contains("96 MiB") == true, "\(row)")
    #expect(row[4] == "7680" && row[5] == "h264", "\(row)")
    let event = try sql(
      database, "SELECT payload->'media'->>'height' FROM thumbs.events WHERE kind = 'failed'"
    ).rows
    #expect(event == [["4320"]])
  }

  /// A 200 MB clip, its index at the end, from an origin that ignores `Range` (and the same file from
  /// one that answers ranges): downloaded to the spool, read in parts from there, the same poster as the
  /// ranged read, the worker's peak RSS within the budget and 64 MiB, the spool left empty. A spool
  /// smaller than the file refuses it as too_large.
  @Test func aLargeVideoFromAnOriginWithoutRangesGoesThroughTheSpool() async throws {
    let folder = try makeTemporaryDirectory()
    let clip = folder.appendingPathComponent("big.mp4")
    let (status, output) = try runProgram(
      "/usr/bin/ffmpeg",
      [
        "-v", "error", "-y", "-f", "lavfi", "-i",
        "testsrc2=size=1280x720:rate=30:duration=4.5,noise=alls=40:allf=t", "-c:v", "libx264", "-preset",
        "ultrafast", "-qp", "4", "-g", "30", "-pix_fmt", "yuv420p", clip.path,
      ])
    try #require(status == 0, "ffmpeg: \(output)")
    let size = try Data(contentsOf: clip).count
    try #require(size > 150 << 20, "the clip is \(size) bytes")
    let database = try TestDatabase.create()
    let storage = try makeTemporaryDirectory()
    let spool = try makeTemporaryDirectory()
    let origin = try TestOrigin(root: folder)
    for path in ["/norange/big.mp4", "/files/big.mp4"] {
      try sql(database, "SELECT thumbs.enqueue($1)", [origin.url(path)])
    }
    let worker = try WorkerProcess(
      databaseURL: database, storage: storage,
      settings: ["THUMBD_CONCURRENCY": "2", "THUMBD_SPOOL_DIR": spool.path, "THUMBD_FETCH_TIMEOUT": "120"])
    let settled = try await eventually(timeout: 180) {
      try sql(database, "SELECT count(*) FROM thumbs.jobs WHERE state IN ('succeeded', 'failed')").rows[0][0]
        == "2"
    }
    #expect(settled, "\(worker.log)")
    let jobs = try sql(
      database,
      "SELECT j.source_url, j.state, j.last_error, array_agg(v.storage_key ORDER BY v.name)::text"
        + " FROM thumbs.jobs j LEFT JOIN thumbs.variants v ON v.job_id = j.id GROUP BY j.id ORDER BY j.id"
    ).rows
    for job in jobs { #expect(job[1] == "succeeded", "\(job)") }
    #expect(jobs.count == 2 && jobs[0][3] == jobs[1][3], "the same thumbnails: \(jobs)")
    // The whole file went once from the origin without ranges; a few percent from the other.
    #expect(try await origin.count(at: "/_bytes/norange/big.mp4", key: "bytes") == size)
    #expect(try await origin.count(at: "/_bytes/files/big.mp4", key: "bytes") < size / 20)
    let originals = try sql(
      database,
      "SELECT url, bytes::text, bytes_read::text, sha256 IS NOT NULL, index_sha256 FROM thumbs.originals"
        + " ORDER BY url"
    ).rows
    try #require(originals.count == 2, "\(originals)")
    let (ranged, spooled) = (originals[0], originals[1])
    #expect(spooled[0]?.contains("/norange/") == true && ranged[0]?.contains("/files/") == true)
    #expect(spooled[1] == String(size) && spooled[2] == String(size) && spooled[3] == "t", "\(spooled)")
    #expect(ranged[1] == String(size) && Int(ranged[2] ?? "") ?? size < size / 20, "\(ranged)")
    #expect(spooled[4] != nil && spooled[4] == ranged[4], "the same index: \(originals)")
    let peak = try #require(FaultyOriginWorkerTests.peakResidentKiB(worker.pid))
    print("worker VmHWM with a \(size)-byte clip from an origin without ranges: \(peak) KiB")
    #expect(peak < (256 + 64) * 1024, "peak RSS \(peak) KiB")
    #expect(try FileManager.default.contentsOfDirectory(atPath: spool.path) == [])
    worker.send(SIGTERM)
    #expect(await worker.waitForExit(timeout: 30) == 0)

    // A spool too small for the file: too_large, with the option to raise.
    try sql(database, "SELECT thumbs.enqueue($1)", [origin.url("/norange/big.mp4?small-spool")])
    let totals = try await drainQueue(databaseURL: database, storage: storage) {
      $0.maxSpoolBytes = 100 << 20
      $0.spoolDirectory = spool.path
    }
    #expect(totals.failed == 1)
    let failed = try sql(
      database, "SELECT error_code, last_error FROM thumbs.jobs WHERE source_url LIKE '%small-spool'"
    ).rows
    #expect(
      failed.first?[0] == "too_large" && failed.first?[1]?.contains("--max-spool-bytes") == true, "\(failed)")
  }

  /// Two 4K clips read by ranges whose decodes do not fit the budget together: the second waits for
  /// memory (its job is seen `awaiting_memory`), both succeed, and the worker stays within the budget
  /// and 64 MiB. The budget is made from the costs the admission predicts for their ranged reads.
  @Test func twoRangedVideosThatDoNotFitTogetherTakeTurns() async throws {
    let names = ["4k-hevc10.mov", "4k-hevc10-hlg.mov"]
    let folder = try #require(PhoneVideos.folder(kinds: Self.kinds), "phone-videos.py failed")
    var costs: [Int] = []
    for name in names {
      let bytes = try [UInt8](Data(contentsOf: folder.appendingPathComponent(name)))
      let step = try RangedReading.run(
        total: bytes.count, head: Array(bytes.prefix(RangedReading.headBytes)), planner: VideoRangePlanner(),
        maxBytes: 50 << 20
      ) { range throws(JobError) in Array(bytes[range]) }
      guard case .done(let held) = step else {
        throw JobError(.internalError, "\(name) is not read by ranges")
      }
      let opened = try Thumbnailer().open(.parts(held))
      costs.append(
        try #require(Thumbnailer().probe(opened, variants: Profile.default.variants)).estimate.total)
    }
    let budget = costs.max()! + costs.min()! / 2
    let database = try TestDatabase.create()
    let storage = try makeTemporaryDirectory()
    let origin = try TestOrigin(root: folder)
    let worker = try WorkerProcess(
      databaseURL: database, storage: storage,
      settings: [
        "THUMBD_CONCURRENCY": "2", "THUMBD_MEMORY_BUDGET": String(budget), "THUMBD_ORIGINAL_CACHE": "0",
      ])
    let port = try #require(await worker.httpPort(), "log:\n\(worker.log)")
    _ = try sql(
      database, "SELECT thumbs.enqueue(u) FROM unnest($1::text[]) u",
      ["{" + names.map { origin.url("/files/\($0)") }.joined(separator: ",") + "}"])
    var phases: Set<String> = []
    let settled = try await eventually(timeout: 120) {
      if let view = try? HeldJobsView(HTTPProbe.get(port, "/debug/jobs")) { phases.formUnion(view.phases) }
      return try sql(database, "SELECT count(*) FROM thumbs.jobs WHERE state IN ('succeeded', 'failed')")
        .rows[0][0] == "2"
    }
    #expect(settled, "\(worker.log)")
    let states = try sql(database, "SELECT state, last_error FROM thumbs.jobs ORDER BY id").rows
    #expect(states.allSatisfy { $0[0] == "succeeded" }, "\(states)")
    #expect(phases.contains("awaiting_memory"), "costs \(costs), budget \(budget): phases seen \(phases)")
    let peak = try #require(FaultyOriginWorkerTests.peakResidentKiB(worker.pid))
    print("two ranged 4K clips, costs \(costs), budget \(budget): worker VmHWM \(peak) KiB")
    #expect(peak < (budget >> 10) + 64 * 1024, "peak RSS \(peak) KiB")
    worker.send(SIGTERM)
    #expect(await worker.waitForExit(timeout: 30) == 0)
  }
}
