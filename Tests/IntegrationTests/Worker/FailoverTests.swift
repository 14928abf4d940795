import Foundation
import Imaging
import Testing

/// The short `make failover`: tools/failover.py runs a primary and a synchronous standby, each in a
/// network namespace of its own, and two workers with a multi-host URL and their default database
/// settings; the primary's host vanishes without a word while they work, the standby is promoted 3 s
/// later. The first job finishes on the new primary within 30 s of the promotion, and every invariant
/// holds (docs/operations.md, "Failover"). The five-run median is `make failover`.
@Suite(
  .serialized,
  .enabled(if: getuid() == 0, "network namespaces need root"),
  .enabled(if: WorkerProcess.binary != nil, Comment(rawValue: WorkerProcess.skipReason)))
struct FailoverTests {
  struct Summary: Decodable {
    struct Run: Decodable {
      let first_job_after_promotion_s: Double?
      let held: [String: Bool]
      let ok: Bool
    }
    let runs: [Run]
  }

  @Test func aFleetReachesThePromotedStandbyWithinThirtySecondsLosingNothing() throws {
    let photos = try makeTemporaryDirectory()
    for i in 0..<4 {
      var image = PixelBuffer(width: 640 + i * 200, height: 480 + i * 120, channels: 3)
      for p in 0..<image.pixels.count { image.pixels[p] = UInt8(truncatingIfNeeded: p / 7 + i * 50) }
      try Data(try JPEG.encode(image, quality: 85)).write(to: photos.appendingPathComponent("photo\(i).jpg"))
    }
    let summaryURL = photos.appendingPathComponent("summary.json")
    let binary = try #require(WorkerProcess.binary)
    let (code, output) = try runProgram(
      "/usr/bin/timeout",
      [
        "400", "python3", TestDatabase.repoRoot.appendingPathComponent("tools/failover.py").path,
        "--thumbd", binary.path, "--photos", photos.path, "--runs", "1", "--jobs", "60", "--json",
        summaryURL.path,
      ], withStandardError: true)
    #expect(code == 0, "failover.py exit \(code):\n\(output.suffix(6000))")
    let summary = try JSONDecoder().decode(Summary.self, from: Data(contentsOf: summaryURL))
    let run = try #require(summary.runs.first)
    #expect(run.held.count == 7)
    for (name, held) in run.held { #expect(held, "\(name)") }
    let took = try #require(run.first_job_after_promotion_s)
    #expect(took < 30, "the first job on the promoted standby finished \(took) s after the promotion")
  }
}
