import ArgumentParser
import Foundation
import Imaging
import ThumbCore

/// `thumbd bench memory FILE...`: for each file, the peak memory the cost model predicts for rendering
/// a profile (the default one unless `--profile` names a spec file), against the peak actually measured. Each file renders in a child process of its
/// own (this binary, `--single`), because a process's peak RSS (VmHWM) only ever grows.
struct BenchMemory: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "memory",
    abstract: "Predicted against measured peak memory of rendering each file, one child process per file.")

  @Flag(help: "render one file in this process and print its figures (what the parent runs)") var single =
    false
  @Option(help: "profile: 'default', or a JSON spec file") var profile = "default"
  @Argument(help: "image files (JPEG, PNG, WebP, HEIC, AVIF, GIF, JPEG XL)") var files: [String]

  func run() throws {
    try ImagingProcess.prepare()
    if single {
      try measureOne(files[0])
      return
    }
    print("| file | pixels | progressive | predicted MiB | measured MiB | measured/predicted |")
    print("|---|---:|---|---:|---:|---:|")
    var worst = 0.0
    for file in files {
      let child = Process()
      child.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
      child.arguments = ["bench", "memory", "--single", "--profile", profile, file]
      let output = Pipe()
      child.standardOutput = output
      try child.run()
      let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
      child.waitUntilExit()
      let fields = Dictionary(
        uniqueKeysWithValues: text.split(whereSeparator: \.isWhitespace).compactMap { pair in
          let parts = pair.split(separator: "=", maxSplits: 1)
          return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
        })
      guard let predicted = fields["predicted_bytes"].flatMap(Double.init),
        let measured = fields["measured_bytes"].flatMap(Double.init)
      else {
        print("| \(file) | failed: \(text.trimmingCharacters(in: .whitespacesAndNewlines)) | | | | |")
        continue
      }
      let ratio = measured / predicted
      worst = max(worst, ratio)
      print(
        "| \(URL(fileURLWithPath: file).lastPathComponent) | \(fields["pixels"] ?? "?") | \(fields["progressive"] ?? "?") "
          + "| \(String(format: "%.1f", predicted / 1_048_576)) | \(String(format: "%.1f", measured / 1_048_576)) "
          + "| \(String(format: "%.2f", ratio)) |")
    }
    print("worst_measured_over_predicted=\(String(format: "%.3f", worst))")
  }

  /// Prints `predicted_bytes=... measured_bytes=... pixels=... progressive=...` for one render.
  func measureOne(_ file: String) throws {
    let thumbnailer = Thumbnailer()
    let variants = try Profile.load(profile).variants
    let baseline = try peakResidentBytes()
    let bytes = try readFile(file)
    guard let predicted = thumbnailer.predictedPeak(of: bytes, variants: variants) else {
      throw ValidationError("\(file): not an image thumbd can size from its header")
    }
    let frame = ImageProbe.jpegFrame(bytes)
    let (info, _) = try thumbnailer.render(bytes, variants: variants)
    let measured = try peakResidentBytes() - baseline
    print(
      "predicted_bytes=\(predicted.total) measured_bytes=\(measured) pixels=\(frame?.size ?? info.size) "
        + "progressive=\(frame.map { String($0.progressive) } ?? info.format.rawValue)")
  }

  /// The file's bytes, read straight into one array: going through Data would hold them twice for a
  /// moment, and the peak would count that copy.
  func readFile(_ path: String) throws -> [UInt8] {
    guard let stream = fopen(path, "rb") else { throw ValidationError("cannot read \(path)") }
    defer { fclose(stream) }
    fseek(stream, 0, SEEK_END)
    let length = ftell(stream)
    fseek(stream, 0, SEEK_SET)
    guard length > 0 else { throw ValidationError("\(path) is empty") }
    return try [UInt8](unsafeUninitializedCapacity: length) { buffer, count in
      count = fread(buffer.baseAddress, 1, length, stream)
      guard count == length else { throw ValidationError("short read of \(path)") }
    }
  }

  /// VmHWM: the most resident memory this process has had, in bytes.
  func peakResidentBytes() throws -> Int {
    let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
    for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
      if let kib = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) { return kib * 1024 }
    }
    throw ValidationError("no VmHWM in /proc/self/status")
  }
}
