import Foundation
import Testing

/// The short bad-input sweep: tools/sweep.py mutates valid photos of every input format (truncations,
/// flipped bytes, broken markers, chunks and boxes, huge header sizes), adds ../shared/corpus/invalid
/// when it is there, and sends each file through real `thumbd worker` processes. Each must end as a
/// permanent, classified image error or a correct thumbnail: no crash, no hang, no job left running.
/// The long sweep is `make sweep` (docs/reliability.md).
@Suite(.serialized, .enabled(if: WorkerProcess.binary != nil, Comment(rawValue: WorkerProcess.skipReason)))
struct BadInputSweepTests {
  struct Summary: Decodable {
    struct Check: Decodable {
      let held: Bool
      let figure: String
    }
    let files: Int
    let crashes: Int
    let hangs: Int
    let transient_failures: Int
    let succeeded: Int
    let failed: Int
    let objects_checked: Int
    let formats_covered: [String]
    let by_mutator: [String: Int]
    let outcomes: [String: Int]
    let checks: [String: Check]
  }

  @Test func everyBrokenPhotoEndsClassifiedWithNoCrashOrHang() throws {
    let folder = try makeTemporaryDirectory()
    let summaryURL = folder.appendingPathComponent("sweep.json")
    let binary = try #require(WorkerProcess.binary)
    let mutations = 300
    let (code, output) = try runProgram(
      "/usr/bin/timeout",
      [
        "900", "python3", TestDatabase.repoRoot.appendingPathComponent("tools/sweep.py").path,
        "--thumbd", binary.path, "--mutations", "\(mutations)", "--seed", "1", "--workers", "2",
        "--out-json", summaryURL.path, "--findings", folder.appendingPathComponent("findings").path,
      ], withStandardError: true)
    #expect(code == 0, "sweep.py exit \(code):\n\(output.suffix(6000))")
    let summary = try JSONDecoder().decode(Summary.self, from: Data(contentsOf: summaryURL))
    #expect(summary.files == mutations)
    #expect(summary.crashes == 0)
    #expect(summary.hangs == 0)
    #expect(summary.transient_failures == 0)
    // Every format thumbd reads had seeds (made here when ../shared is absent), and the mutations
    // reached both ends: some still decode, most do not.
    #expect(Set(summary.formats_covered) == ["jpeg", "png", "webp", "heic", "avif", "video", "gif", "jxl"])
    #expect(summary.by_mutator.count >= 20, "mutators used: \(summary.by_mutator.keys.sorted())")
    #expect(summary.succeeded > 0 && summary.failed > 0, "outcomes: \(summary.outcomes)")
    #expect((summary.outcomes["corrupt_image"] ?? 0) > 0)
    #expect(summary.objects_checked > 0)
    #expect(summary.checks.count == 6)
    for (name, check) in summary.checks {
      #expect(check.held, "\(name): \(check.figure)")
    }
  }
}
