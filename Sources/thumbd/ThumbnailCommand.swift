import ArgumentParser
import Foundation
import Imaging
import Queue
import ThumbCore

struct ThumbnailCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "thumbnail",
    abstract:
      "Without a database: write DIR/<stem>_<variant>.<ext> for each file (a stem an earlier file took: its whole name); exit 1 if any failed."
  )

  @Option(help: "output folder") var out: String
  @Option(help: "profile: 'default', or a JSON spec file") var profile = "default"
  @Option(help: "largest original in pixels") var maxPixels = 100_000_000
  @Flag(help: "print per-file timing") var verbose = false
  @Argument(help: "image files") var files: [String]

  /// A file on disk read a range at a time, as the worker reads an origin or the spool.
  struct LocalFile {
    let path: String
    let handle: FileHandle

    init(_ path: String) throws(JobError) {
      guard let handle = FileHandle(forReadingAtPath: path) else {
        throw JobError(.notFound, "cannot read \(path)")
      }
      self.path = path
      self.handle = handle
    }

    func close() { try? handle.close() }

    var size: Int {
      get throws(JobError) {
        do { return Int(try handle.seekToEnd()) } catch {
          throw JobError(.notFound, "cannot read \(path): \(error)")
        }
      }
    }

    func read(_ range: Range<Int>) throws(JobError) -> [UInt8] {
      do {
        try handle.seek(toOffset: UInt64(range.lowerBound))
        return [UInt8](try handle.read(upToCount: range.count) ?? Data())
      } catch {
        throw JobError(.notFound, "cannot read \(path): \(error)")
      }
    }
  }

  /// A file's bytes: a video named so (.mp4, .mov, .m4v, .3gp) read by ranges, its index and first
  /// keyframes, as the worker reads one from an origin (RangedOriginal); any other whole.
  static func original(_ file: String) throws(JobError) -> OriginalBytes {
    let local = try LocalFile(file)
    defer { local.close() }
    let total = try local.size
    guard SourceURL.readsByRanges(file), total > RangedReading.headBytes else {
      return .whole(try local.read(0..<total))
    }
    let step = try RangedReading.run(
      total: total, head: try local.read(0..<RangedReading.headBytes), planner: VideoRangePlanner(),
      maxBytes: Int.max, read: local.read)
    guard case .done(let held) = step else { return .whole(try local.read(0..<total)) }
    return .parts(held)
  }

  /// A video read by ranges with `ranges` of `file` read too.
  static func adding(
    _ ranges: [Range<Int>], to original: OriginalBytes, of file: String
  ) throws(JobError) -> OriginalBytes {
    guard var held = original.parts else { throw JobError(.notFound, "cannot read \(file)") }
    let local = try LocalFile(file)
    defer { local.close() }
    for range in ranges where !held.holds(range) {
      held.add(try local.read(range), at: range.lowerBound)
    }
    return .parts(held)
  }

  func run() throws {
    try ImagingProcess.prepare()
    Allocator.keepFreedMemoryForReuse()
    let spec = try loadProfile()
    try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
    let thumbnailer = Thumbnailer(maxPixels: maxPixels)
    var failures = 0
    let started = Date()
    var totals = StageTimes()
    for (file, stem) in zip(files, OutputStems.assign(files)) {
      do {
        let t0 = Date()
        var original = try Self.original(file)
        // A video read by ranges: the keyframes its poster search asks for are read too, as a worker
        // reads them from an origin.
        var search: PosterSearch? = original.parts != nil ? .start : nil
        var rendered: (SourceInfo, [RenderedVariant])?
        while rendered == nil {
          switch try thumbnailer.render(thumbnailer.open(original), variants: spec.variants, asking: search) {
          case .rendered(let info, let variants): rendered = (info, variants)
          case .wants(let ranges, let next):
            let more = try Self.adding(ranges, to: original, of: file)
            // Nothing more could be read: the search passes over what it lacks.
            search = more.count == original.count ? nil : next
            original = more
          }
        }
        guard let (info, variants) = rendered else { continue }
        for variant in variants {
          let path = "\(out)/\(stem)_\(variant.name).\(variant.format.fileExtension)"
          try Data(variant.data).write(to: URL(fileURLWithPath: path), options: .atomic)
        }
        for warning in info.warnings {
          FileHandle.standardError.write(Data("\(file): warning: \(warning.code): \(warning.message)\n".utf8))
        }
        if verbose {
          let ms = Int(Date().timeIntervalSince(t0) * 1000)
          let t = info.timings
          let stages = [t.decode, t.resize, t.encode].map { String(Int(($0 ?? 0) * 1000)) }
          totals.add(t)
          print(
            "\(file): \(info.format.rawValue) \(info.size) orientation \(info.orientation.rawValue) "
              + "decoded \(info.reduction)\(info.hasAlpha ? " alpha" : "") \(ms) ms "
              + "(decode \(stages[0]), resize \(stages[1]), encode \(stages[2])) thumbhash \(info.thumbHash)"
              + (original.count != original.fileSize
                ? " read \(original.count) of \(original.fileSize) bytes" : "")
              + variants.filter { $0.frames > 1 }.map { " \($0.name): \($0.frames) frames" }.joined()
          )
        }
      } catch let error as JobError {
        failures += 1
        FileHandle.standardError.write(Data("\(file): \(error.code.rawValue): \(error.message)\n".utf8))
      }
    }
    let seconds = Date().timeIntervalSince(started)
    if verbose {
      let parts = [totals.decode, totals.resize, totals.encode].map { String(format: "%.2f", $0 ?? 0) }
      print("stages: decode \(parts[0]) s, resize \(parts[1]) s, encode \(parts[2]) s")
    }
    print(
      "\(files.count - failures) of \(files.count) files thumbnailed in \(String(format: "%.2f", seconds)) s"
        + (failures > 0 ? ", \(failures) failed" : ""))
    if failures > 0 { throw ExitCode(1) }
  }

  func loadProfile() throws -> Profile { try Profile.load(profile) }
}

extension Profile {
  /// `--profile`'s value: `default`, or a JSON spec file.
  static func load(_ profile: String) throws -> Profile {
    if profile == "default" { return .default }
    guard let json = FileManager.default.contents(atPath: profile) else {
      throw ValidationError("--profile: 'default' or a readable JSON spec file, not '\(profile)'")
    }
    return try ProfileSpec.parse(name: URL(fileURLWithPath: profile).lastPathComponent, json: json)
  }
}
