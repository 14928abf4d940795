import Foundation
import Imaging
import Testing

/// The short `make chaos`: tools/chaos.py runs 4 workers, each in a network namespace of its own,
/// through SIGKILLs, a SIGSTOP past the lease, a cut link, a slow and lossy link, a PostgreSQL restart
/// and a 15 s PostgreSQL outage, and a SIGTERM to the fleet a moment after one worker restarted; then
/// checks every invariant (docs/reliability.md). The long runs are `make chaos`.
@Suite(
  .serialized,
  .enabled(if: getuid() == 0, "network namespaces need root"),
  .enabled(if: WorkerProcess.binary != nil, Comment(rawValue: WorkerProcess.skipReason)))
struct ChaosTests {
  struct Summary: Decodable {
    struct Invariant: Decodable {
      let held: Bool
      let figure: String
    }
    let jobs: Int
    let faults: [String: Int]
    let invariants: [String: Invariant]
  }

  @Test func aFleetUnderFireLosesNothingAndDoesNothingTwice() throws {
    let photos = try makeTemporaryDirectory()
    for i in 0..<6 {
      let (width, height) = (640 + i * 220, 480 + i * 130)
      var image = PixelBuffer(width: width, height: height, channels: 3)
      for p in 0..<image.pixels.count { image.pixels[p] = UInt8(truncatingIfNeeded: p / 5 + i * 40) }
      try Data(try JPEG.encode(image, quality: 85)).write(to: photos.appendingPathComponent("photo\(i).jpg"))
    }
    let summaryURL = photos.appendingPathComponent("summary.json")
    let binary = try #require(WorkerProcess.binary)
    let (code, output) = try runProgram(
      "/usr/bin/timeout",
      [
        "600", "python3", TestDatabase.repoRoot.appendingPathComponent("tools/chaos.py").path,
        "--thumbd", binary.path, "--photos", photos.path, "--workers", "4", "--jobs", "120",
        "--seconds", "40", "--lease-ttl", "3", "--seed", "1", "--json", summaryURL.path,
      ], withStandardError: true)
    #expect(code == 0, "chaos.py exit \(code):\n\(output.suffix(6000))")
    let summary = try JSONDecoder().decode(Summary.self, from: Data(contentsOf: summaryURL))
    #expect(summary.jobs >= 50)
    #expect(summary.invariants.count == 9)
    for (name, invariant) in summary.invariants {
      #expect(invariant.held, "\(name): \(invariant.figure)")
    }
    for fault in [
      "sigkill", "sigstop", "link_cut", "postgres_restart", "postgres_stop_15s", "sigterm_after_restart",
    ] {
      #expect((summary.faults[fault] ?? 0) >= 1, "\(fault) was injected")
    }
  }
}
