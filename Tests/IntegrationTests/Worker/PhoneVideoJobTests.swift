import Foundation
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
}
