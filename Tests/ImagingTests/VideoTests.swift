import Foundation
import TestSupport
import Testing
import ThumbCore

@testable import Imaging

/// Video originals: every clip of the generated matrix (Tests/Support/video-matrix.py) and of the shared
/// corpus gets the default profile's four variants from a poster that is not black, at its upright
/// display size; what cannot be read fails with the error its kind calls for.
@Suite(.enabled(if: VideoMatrix.isAvailable, Comment(rawValue: VideoMatrix.skipReason)))
struct VideoMatrixTests {
  @Test(arguments: VideoMatrix.cases)
  func eachClipGetsItsPosterOrItsError(_ clip: VideoMatrix.Case) throws {
    let bytes = try VideoMatrix.bytes(clip.name)
    #expect(ImageFormat.sniff(bytes) == .video || clip.expect != "poster", "\(clip.name) sniffs as a video")
    let allowed = Set(clip.expect.split(separator: "|").map(String.init))
    let rendered: (SourceInfo, [RenderedVariant])
    do {
      rendered = try Thumbnailer().render(bytes, variants: Profile.default.variants)
    } catch {
      let code = error.code.rawValue
      #expect(allowed.contains(code), "\(clip.name): \(error)")
      return
    }
    let (info, variants) = rendered
    #expect(allowed.contains("poster"), "\(clip.name) should have failed (\(clip.expect))")
    #expect(variants.count == 4 && info.format == .video)
    if let upright = clip.upright {
      #expect([info.size.width, info.size.height] == upright, "\(clip.name): \(info.size)")
      // `large` (1600 inside) keeps the clip's own size; `square` is 256x256, or the short side.
      #expect([variants[0].size.width, variants[0].size.height] == upright)
      let side = min(256, upright.min() ?? 0)
      #expect(variants[3].size == PixelSize(width: side, height: side))
    }
    let poster = try JPEG.decode(variants[0].data)
    let (mean, spread) = poster.meanAndSpread
    if clip.note != "flat" {
      #expect(mean > 30 && spread > 15, "\(clip.name): poster mean \(mean), spread \(spread)")
    }
    if let after = clip.posterAfter {
      let time = Double(info.reduction.split(separator: " ")[2]).map { $0 / 1000 } ?? -1
      #expect(time >= after, "\(clip.name): poster at \(info.reduction), wanted after \(after) s")
    }
  }

  /// The frame's size is checked against --max-pixels before anything is decoded, and looking for the
  /// poster stops at its budget.
  @Test func aFrameOverTheLimitAndABudgetSpentFailClearly() throws {
    let bytes = try VideoMatrix.bytes("h264-black-start.mp4")
    #expect(throws: JobError.self) { try VideoSource(bytes, maxPixels: 320 * 180 - 1) }
    do {
      _ = try VideoSource(bytes, maxPixels: 320 * 180 - 1)
    } catch {
      #expect(error.code == .tooLarge && error.message.contains("over the limit"), "\(error)")
    }
    let spent = try VideoSource(bytes, maxPixels: 1_000_000, budget: .zero)
    do {
      _ = try spent.decode(requiredScale: 1, margin: 1)
      Issue.record("a spent budget decoded a poster")
    } catch {
      #expect(error.code == .timeout, "\(error)")
    }
  }

  @Test func sniffingTellsVideosFromPhotos() {
    func ftyp(_ major: String, _ compatible: [String]) -> [UInt8] {
      let body = Array(major.utf8) + [0, 0, 0, 0] + compatible.flatMap { Array($0.utf8) }
      let size = 8 + body.count
      return [0, 0, 0, UInt8(size)] + Array("ftyp".utf8) + body
    }
    #expect(ImageFormat.sniff(ftyp("isom", ["isom", "iso2", "avc1", "mp41"])) == .video)
    #expect(ImageFormat.sniff(ftyp("qt  ", ["qt  "])) == .video)
    #expect(ImageFormat.sniff(ftyp("3gp4", ["3gp4", "isom"])) == .video)
    #expect(ImageFormat.sniff(ftyp("heic", ["mif1", "heic"])) == .heif)
    #expect(ImageFormat.sniff(ftyp("avif", ["mif1", "avif"])) == .avif)
    #expect(ImageFormat.sniff(ftyp("crx ", ["crx "])) == nil)
    #expect(ImageFormat.sniff([0x1A, 0x45, 0xDF, 0xA3, 0x9F]) == .video)
    #expect(
      ImageFormat.sniff([0, 0, 0, 8] + Array("wide".utf8) + [0, 0, 0, 8] + Array("mdat".utf8)) == .video)
  }

  @Test func displayMatrixTurnsAndPixelAspectRatios() {
    #expect(VideoSource.orientation(rotation: -90, flipped: false) == .rotated90Clockwise)
    #expect(VideoSource.orientation(rotation: 90, flipped: false) == .rotated90CounterClockwise)
    #expect(VideoSource.orientation(rotation: 180, flipped: false) == .rotated180)
    #expect(VideoSource.orientation(rotation: -180, flipped: false) == .rotated180)
    #expect(VideoSource.orientation(rotation: 0, flipped: true) == .mirrored)
    let size = PixelSize(width: 720, height: 480)
    #expect(VideoSource.displaySize(coded: size, sar: (32, 27)) == PixelSize(width: 853, height: 480))
    #expect(VideoSource.displaySize(coded: size, sar: (8, 9)) == PixelSize(width: 720, height: 540))
    #expect(VideoSource.displaySize(coded: size, sar: (0, 1)) == size)
  }
}

/// The real videos of ../shared/corpus/video: an iPod clip that opens on white, an iPhone clip turned
/// by its track matrix, an old phone's MPEG-4 Part 2 clip.
@Suite(.enabled(if: SharedCorpus.isAvailable, Comment(rawValue: SharedCorpus.skipReason)))
struct VideoCorpusTests {
  @Test(arguments: [
    ("video/sample_iPod.m4v", 320, 240), ("video/with-gps.mov", 320, 568), ("video/sample.3gp", 176, 144),
  ])
  func eachCorpusVideoGetsFourUprightVariants(_ path: String, _ width: Int, _ height: Int) throws {
    let (info, variants) = try Thumbnailer().render(
      try SharedCorpus.bytes(path), variants: Profile.default.variants)
    #expect(info.format == .video && info.size == PixelSize(width: width, height: height), "\(info.size)")
    #expect(variants.count == 4)
    let poster = try JPEG.decode(variants[0].data)
    #expect(poster.size == PixelSize(width: width, height: height))
    let (mean, spread) = poster.meanAndSpread
    #expect(mean > 30 && spread > 15, "\(path): poster mean \(mean), spread \(spread), at \(info.reduction)")
  }
}

extension PixelBuffer {
  /// The mean and standard deviation of every sample: a black frame has a low mean, a blank one a low
  /// spread.
  fileprivate var meanAndSpread: (Double, Double) {
    let n = Double(max(1, pixels.count))
    let mean = Double(pixels.reduce(0) { $0 + Int($1) }) / n
    let variance = pixels.reduce(0.0) { $0 + (Double($1) - mean) * (Double($1) - mean) } / n
    return (mean, variance.squareRoot())
  }
}

/// Videos read by ranges (VideoRangePlanner): the head, the boxes to the index, the index, the first
/// keyframes. The poster is the one the whole file gives, from a few percent of its bytes.
@Suite(.enabled(if: VideoMatrix.isAvailable, Comment(rawValue: VideoMatrix.skipReason)))
struct VideoRangeTests {
  /// Reads `bytes` as the fetcher would, from a head of `head` bytes.
  static func ranged(_ bytes: [UInt8], head: Int) throws(JobError) -> RangedReading.Step {
    try RangedReading.run(
      total: bytes.count, head: Array(bytes.prefix(head)), planner: VideoRangePlanner(), maxBytes: bytes.count
    ) { range throws(JobError) in Array(bytes[range.clamped(to: 0..<bytes.count)]) }
  }

  @Test(arguments: ["long-index-at-end.mp4", "long-index-first.mp4"])
  func aLongVideoIsReadByItsIndexAndFirstKeyframe(_ name: String) throws {
    let bytes = try VideoMatrix.bytes(name)
    let step = try Self.ranged(bytes, head: RangedReading.headBytes)
    guard case .done(let held) = step else {
      Issue.record("\(name): \(step)")
      return
    }
    // The head, the index and three keyframes (of a few tens of KB each here).
    #expect(
      held.bytesHeld <= RangedReading.headBytes + bytes.count / 20,
      "\(name): \(held.bytesHeld) of \(bytes.count) bytes")
    let whole = try Thumbnailer().render(bytes, variants: Profile.default.variants)
    let parts = try Thumbnailer().render(.parts(held), variants: Profile.default.variants)
    #expect(parts.0.thumbHash == whole.0.thumbHash && parts.0.size == whole.0.size)
    #expect(parts.1.map(\.data) == whole.1.map(\.data), "\(name): the same poster, byte for byte")
  }

  /// `held` rendered as a worker renders an original read by ranges: the keyframes its poster search
  /// asks for are read from `bytes` and the search goes on. Also returns the bytes held in the end.
  static func renderAsking(
    _ held: RangedOriginal, of bytes: [UInt8]
  ) throws(JobError) -> ((SourceInfo, [RenderedVariant]), Int) {
    var held = held
    var search = PosterSearch.start
    for _ in 0..<8 {
      switch try Thumbnailer().render(
        Thumbnailer().open(.parts(held)), variants: Profile.default.variants, asking: search)
      {
      case .rendered(let info, let variants): return ((info, variants), held.bytesHeld)
      case .wants(let ranges, let next):
        for range in ranges { held.add(Array(bytes[range]), at: range.lowerBound) }
        search = next
      }
    }
    throw JobError(.internalError, "the poster search kept asking")
  }

  /// A slow start from black (3 s, then a fade in) with a keyframe a second: the first keyframes a ranged
  /// read takes are black, and the search reads on to the keyframe a whole read takes, from a few
  /// percent of the file.
  @Test func aSlowFadeInGetsTheSamePosterReadByRanges() throws {
    let bytes = try VideoMatrix.bytes("slow-fade-in.mp4")
    guard case .done(let held) = try Self.ranged(bytes, head: RangedReading.headBytes) else {
      Issue.record("not read by ranges")
      return
    }
    let whole = try Thumbnailer().render(bytes, variants: Profile.default.variants)
    let (ranged, bytesHeld) = try Self.renderAsking(held, of: bytes)
    #expect(whole.0.reduction.hasPrefix("keyframe at 4"), "\(whole.0.reduction)")
    #expect(ranged.0.reduction == whole.0.reduction)
    #expect(ranged.1.map(\.data) == whole.1.map(\.data), "the same poster, byte for byte")
    // A 12 s clip: the head, the index and the keyframes to the fifth (each about 1.5% of this file);
    // of a long clip, the same few (bench/video).
    #expect(bytesHeld <= RangedReading.headBytes + bytes.count / 8, "\(bytesHeld) of \(bytes.count)")
    // Passing over what it does not hold (as before), the search would have taken a black keyframe.
    let passedOver = try Thumbnailer().render(.parts(held), variants: Profile.default.variants)
    #expect(passedOver.0.thumbHash != whole.0.thumbHash)
  }

  /// From a 4 KB head, every MP4 and QuickTime clip of the matrix is walked box by box: read by ranges it
  /// renders as it does whole (its poster search reading the keyframes it asks for), or fails as it does
  /// whole.
  @Test(arguments: VideoMatrix.cases.filter { !$0.name.hasSuffix(".webm") && !$0.name.hasSuffix(".mkv") })
  func everyClipReadByRangesRendersAsItDoesWhole(_ clip: VideoMatrix.Case) throws {
    let bytes = try VideoMatrix.bytes(clip.name)
    let held: RangedOriginal?
    switch try? Self.ranged(bytes, head: 4096) {
    case .done(let parts)?: held = parts
    default: held = nil  // read whole: Matroska, no index found
    }
    let whole = Result { () throws(JobError) in
      try Thumbnailer().render(bytes, variants: Profile.default.variants)
    }
    let ranged = Result { () throws(JobError) in
      if let held { return try Self.renderAsking(held, of: bytes).0 }
      return try Thumbnailer().render(bytes, variants: Profile.default.variants)
    }
    switch (whole, ranged) {
    case (.success(let a), .success(let b)):
      #expect(a.0.thumbHash == b.0.thumbHash, "\(clip.name): \(a.0.reduction) / \(b.0.reduction)")
      #expect(a.0.reduction == b.0.reduction, "\(clip.name): the same keyframe")
    case (.failure(let a), .failure(let b)):
      #expect(a.code == b.code, "\(clip.name): \(a) / \(b)")
    default:
      Issue.record("\(clip.name): whole \(whole), by ranges \(ranged)")
    }
  }

  /// A profile's poster time: the keyframe at or before it, whether or not it is worth showing, and read
  /// by ranges the reading adds that keyframe.
  @Test func aPosterTimeTakesTheKeyframeAtOrBeforeIt() throws {
    let black = try VideoMatrix.bytes("h264-black-start.mp4")
    let atStart = try Thumbnailer().render(black, variants: Profile.default.variants, posterAt: 0)
    #expect(atStart.0.reduction.hasPrefix("keyframe at 0 ms"), "\(atStart.0.reduction)")
    let later = try Thumbnailer().render(black, variants: Profile.default.variants, posterAt: 3.5)
    #expect(later.0.reduction.hasPrefix("keyframe at 3000 ms"), "\(later.0.reduction)")
    let past = try Thumbnailer().render(black, variants: Profile.default.variants, posterAt: 3600)
    #expect(past.0.reduction.hasPrefix("keyframe at 4000 ms"), "the last keyframe: \(past.0.reduction)")

    let long = try VideoMatrix.bytes("long-index-at-end.mp4")
    guard case .done(var held) = try Self.ranged(long, head: RangedReading.headBytes) else {
      Issue.record("not read by ranges")
      return
    }
    let planner = VideoRangePlanner()
    let wanted = planner.ranges(at: 15.5, after: held)
    #expect(wanted.count == 1)
    for range in wanted { held.add(Array(long[range]), at: range.lowerBound) }
    #expect(planner.ranges(at: 15.5, after: held).isEmpty)
    let ranged = try Thumbnailer().render(.parts(held), variants: Profile.default.variants, posterAt: 15.5)
    let whole = try Thumbnailer().render(long, variants: Profile.default.variants, posterAt: 15.5)
    #expect(ranged.0.reduction.hasPrefix("keyframe at 15000 ms"), "\(ranged.0.reduction)")
    #expect(ranged.0.thumbHash == whole.0.thumbHash)
  }
}
