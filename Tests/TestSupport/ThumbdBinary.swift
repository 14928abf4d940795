public import Foundation

/// The `thumbd` executable `swift build --build-tests` put next to the test bundle, for tests that run
/// it as a child process; nil (and those tests skipped with `skipReason`) when it is not there.
public enum ThumbdBinary {
  public typealias MemoryRatios = (ratios: [Double], output: String)

  public static let url: URL? = {
    let bundle = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    let candidate = bundle.deletingLastPathComponent().appendingPathComponent("thumbd")
    return FileManager.default.isExecutableFile(atPath: candidate.path) ? candidate : nil
  }()

  public static let skipReason =
    "the thumbd binary was not built next to the test bundle: run `swift build --build-tests`"

  /// `thumbd bench memory FILE...`: each file rendered in a child process of its own, its VmHWM growth
  /// against the cost model's prediction. Returns the table's last column (measured ÷ predicted) of the
  /// rows naming a file that ends in `suffix`, and the whole output for failure messages.
  public static func memoryRatios(
    of files: [String], rowsEndingIn suffix: String, profile: String = "default"
  ) throws -> MemoryRatios {
    let child = Process()
    child.executableURL = url
    child.arguments = ["bench", "memory", "--profile", profile] + files
    let output = Pipe()
    child.standardOutput = output
    try child.run()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    child.waitUntilExit()
    let ratios = text.split(separator: "\n").filter { $0.hasPrefix("| ") && $0.contains(suffix) }.compactMap {
      Double($0.split(separator: "|").last!.trimmingCharacters(in: .whitespaces))
    }
    return (ratios, text)
  }
}
