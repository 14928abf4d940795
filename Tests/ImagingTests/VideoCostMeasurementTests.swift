import Foundation
import TestSupport
import Testing
import ThumbCore

@testable import Imaging

/// The video cost model against real peaks: each clip's poster and the default profile's variants made
/// in a child process of its own (`thumbd bench memory`), whose VmHWM growth the prediction must bound
/// without overstating it by more than half. The clips pass over a black first keyframe, so that two
/// keyframes are decoded and the poster is copied twice.
@Suite(
  .serialized, .enabled(if: VideoMatrix.isAvailable, Comment(rawValue: VideoMatrix.skipReason)),
  .enabled(if: ThumbdBinary.url != nil, Comment(rawValue: ThumbdBinary.skipReason)))
struct VideoCostMeasurementTests {
  static let kinds = ["1080p-h264.mp4", "4k-hevc10.mov", "4k-hevc10-hlg.mov", "4k-vp9.webm", "4k-av1.mp4"]

  @Test func thePredictionBoundsEachKindsPeakWithinHalfAgain() throws {
    let folder = try #require(PhoneVideos.folder(kinds: Self.kinds), "phone-videos.py failed")
    let files = Self.kinds.map { folder.appendingPathComponent($0).path }
    var ratios: [Double] = []
    var text = ""
    for suffix in [".mp4", ".mov", ".webm"] {
      let found = try ThumbdBinary.memoryRatios(
        of: files.filter { $0.hasSuffix(suffix) }, rowsEndingIn: suffix)
      ratios += found.ratios
      text += found.output
    }
    #expect(ratios.count == Self.kinds.count, "\(text)")
    // measured / predicted: predicted over measured between 1.0 and 1.5.
    for ratio in ratios { #expect(ratio <= 1.0 && ratio >= 1 / 1.5, "\(text)") }
  }

  /// A preview decodes every frame of its window after the poster: the prediction (the larger of the
  /// poster's decoder and the preview's pictures) bounds the peak of a 1080p H.264 and a 4K HEVC 10-bit
  /// clip's poster, stills and animated preview, within half again.
  @Test func thePredictionBoundsAPreviewsPeakWithinHalfAgain() throws {
    let kinds = ["1080p-h264.mp4", "4k-hevc10.mov"]
    let folder = try #require(PhoneVideos.folder(kinds: kinds), "phone-videos.py failed")
    let profile = FileManager.default.temporaryDirectory.appendingPathComponent(
      "thumbd-preview-\(UUID()).json")
    defer { try? FileManager.default.removeItem(at: profile) }
    try Data(
      #"{"variants": [{"name": "large", "width": 1600, "height": 1600}, {"name": "small", "width": 320, "height": 320}, {"name": "moving", "width": 320, "height": 320, "format": "webp", "animated": true}]}"#
        .utf8
    ).write(to: profile)
    var ratios: [Double] = []
    var text = ""
    for kind in kinds {
      let found = try ThumbdBinary.memoryRatios(
        of: [folder.appendingPathComponent(kind).path], rowsEndingIn: String(kind.suffix(4)),
        profile: profile.path)
      ratios += found.ratios
      text += found.output
    }
    #expect(ratios.count == kinds.count, "\(text)")
    for ratio in ratios { #expect(ratio <= 1.0 && ratio >= 1 / 1.5, "\(text)") }
    // The 4K preview fits the default budget.
    let fourK = text.split(separator: "\n").first { $0.contains("4k-hevc10.mov") }
    let predicted = fourK.flatMap { Double($0.split(separator: "|")[4].trimmingCharacters(in: .whitespaces)) }
    #expect((predicted ?? .infinity) < 256, "\(text)")
  }

  /// An HEVC keyframe that names pictures before it (a CRA picture, as x265 and open-GOP encoders
  /// write) is decoded as an IDR picture: the same pixels as ffmpeg's decode of the whole stream, without
  /// the grey stand-ins libavcodec would make for what it names. Over x265's options that change what a
  /// slice header holds: several slices, no wavefronts, no SAO, deblocking and chroma offsets, reference
  /// sets in the SPS, long reference lists, parameter sets in every keyframe, temporal layers, lossless
  /// coding, 4:4:4.
  @Test(arguments: [
    ("yuv420p", "bframes=3"), ("yuv420p", "slices=4"), ("yuv420p", "wpp=0:sao=0"),
    ("yuv420p", "deblock=2,-2:cbqpoffs=3:crqpoffs=-2"), ("yuv420p", "multi-pass-opt-rps=1:bframes=4"),
    ("yuv420p", "ref=5:bframes=8:rc-lookahead=20"), ("yuv420p", "repeat-headers=1:temporal-layers=1"),
    ("yuv420p", "lossless=1"), ("yuv444p", "constrained-intra=1:opt-qp-pps=1"),
  ])
  func aCRAKeyframeDecodesAsTheWholeStreamDoes(format: String, x265: String) throws {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("thumbd-cra-\(UUID())")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let clip = folder.appendingPathComponent("open-gop.mp4")
    try run(
      "ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25:duration=3",
      "-c:v", "libx265", "-preset", "ultrafast", "-pix_fmt", format,
      "-x265-params", "keyint=25:min-keyint=25:scenecut=0:open-gop=1:log-level=error:" + x265, clip.path)
    let reference = folder.appendingPathComponent("frame.y")
    try run(
      "ffmpeg", "-v", "error", "-y", "-threads", "1", "-i", clip.path, "-vf", "select=eq(n\\,25)",
      "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", format, reference.path)
    let source = try VideoSource([UInt8](try Data(contentsOf: clip)), maxPixels: 1 << 24)
    #expect(source.stream.keyframesRewritten)
    source.posterAt = 1.0
    // The keyframe at 1 s is the CRA picture (with a stand-in allowance of none, it decodes rewritten or
    // not at all, and then the poster would be the first keyframe's other pixels).
    let decoded = try source.decode(requiredScale: 1, margin: 1)
    let luma = decoded.image.planes[0]
    var ours: [UInt8] = []
    luma.withUnsafeBufferPointer { buffer in
      for y in 0..<luma.height { ours += buffer[(y * luma.stride)..<(y * luma.stride + luma.width)] }
    }
    let theirs = [UInt8](try Data(contentsOf: reference).prefix(640 * 360))
    #expect(ours.count == 640 * 360 && ours == theirs)
  }

  private func run(_ arguments: String...) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    try process.run()
    process.waitUntilExit()
    #expect(process.terminationStatus == 0, "\(arguments.joined(separator: " "))")
  }
}
