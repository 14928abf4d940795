import Foundation
import Imaging
import Testing
import ThumbCore

/// `--memory-budget`: a job whose predicted peak can never fit fails at once with over_memory_budget
/// and says how much it needed; jobs that fit run under the same budget.
@Suite(.serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)))
struct MemoryBudgetTests {
  @Test func aJobThatCanNeverFitFailsAndTheRestRun() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()  // photo.jpg: 1200 x 900, predicted 18 MiB; big.jpg 41 MiB
    try Data(try makeTestJPEG(width: 2400, height: 1800)).write(
      to: fixture.origin.root.appendingPathComponent("big.jpg"))
    for name in ["photo.jpg", "big.jpg"] {
      try sql(database, "SELECT thumbs.enqueue($1)", [fixture.origin.url("/files/\(name)")])
    }
    let totals = try await drainQueue(databaseURL: database, storage: fixture.storage) {
      $0.memoryBudget = 32 * 1024 * 1024  // an eighth for the original cache, 28 MiB for decoding
    }
    #expect(totals.succeeded == 1 && totals.failed == 1)
    let big = try sql(
      database,
      "SELECT state, error_code, last_error, attempts FROM thumbs.jobs WHERE source_url LIKE '%big.jpg'"
    ).rows[0]
    #expect(big[0] == "failed" && big[1] == "over_memory_budget" && big[3] == "1", "\(big)")
    #expect(big[2]?.contains("needs about") == true && big[2]?.contains("28 MiB") == true, "\(big)")
  }
}

/// The cost model against real peaks: `thumbd bench memory` renders each file in a child process of
/// its own and compares the prediction with the growth of its VmHWM.
@Suite(.enabled(if: WorkerProcess.binary != nil, Comment(rawValue: WorkerProcess.skipReason)))
struct MemoryModelTests {
  @Test func thePredictionBoundsTheMeasuredPeakWithoutWastingMuch() throws {
    let folder = try makeTemporaryDirectory()
    var files: [String] = []
    for (name, width, height, progressive) in [
      ("baseline", 2400, 1800, false), ("progressive", 2400, 1800, true), ("portrait", 1800, 2400, false),
    ] {
      var image = PixelBuffer(width: width, height: height, channels: 3)
      // Noise-like pixels, so the file (part of the prediction) has a realistic size.
      var seed: UInt32 = 12345
      for i in 0..<image.pixels.count {
        seed = seed &* 1_103_515_245 &+ 12345
        image.pixels[i] =
          UInt8(truncatingIfNeeded: (seed >> 16) & 0x3F) &+ UInt8(truncatingIfNeeded: i / 9000)
      }
      let path = folder.appendingPathComponent("\(name).jpg").path
      try Data(try JPEG.encode(image, quality: 85, progressive: progressive)).write(
        to: URL(fileURLWithPath: path))
      files.append(path)
    }
    let child = Process()
    child.executableURL = WorkerProcess.binary
    child.arguments = ["bench", "memory"] + files
    let output = Pipe()
    child.standardOutput = output
    try child.run()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    child.waitUntilExit()
    print(text)
    let ratios = text.split(separator: "\n").filter { $0.hasPrefix("| ") && $0.contains(".jpg") }.compactMap {
      Double($0.split(separator: "|").last!.trimmingCharacters(in: .whitespaces))
    }
    #expect(ratios.count == 3, "\(text)")
    // Measured over predicted: never above 1 (an under-prediction would let the budget be overrun), and
    // not so low that the budget admits far fewer jobs than fit. Measured here: 0.58-0.80.
    for ratio in ratios { #expect(ratio <= 1.0 && ratio >= 0.5, "\(text)") }
  }
}
