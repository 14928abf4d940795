import Foundation
import TestSupport
import Testing
import ThumbCore

@testable import Imaging

/// Animated previews: a variant with `"animated": true` on a video, a Live Photo's MOV or a Motion
/// Photo is a looping animated WebP of its motion, of the profile's length and rate (or the whole clip
/// when shorter), at the variant's size, beside the stills of the same job.
@Suite(.enabled(if: MotionSamples.isAvailable, Comment(rawValue: MotionSamples.skipReason)))
struct MotionPreviewTests {
  static let variants = [
    VariantSpec(name: "still", width: 320, height: 320, fit: .inside, format: .jpeg, quality: 80),
    animatedVariant(320, 320, quality: 75),
  ]

  /// Every file with motion: several frames, looping, as long as asked (the clips last 3 s, the
  /// window 2 s), each frame 100 ms, at the size of the motion's picture.
  @Test(arguments: MotionSamples.cases.filter { $0.expect == "motion" || $0.expect == "video" })
  func motionBecomesAPreview(_ sample: MotionSamples.Case) throws {
    var variants = Self.variants
    variants[1].animation?.previewSeconds = 2
    let (info, rendered) = try Thumbnailer().render(try MotionSamples.bytes(sample.name), variants: variants)
    #expect(rendered.count == 2 && rendered[0].format == .jpeg)
    let played = try Played(rendered[1].data)
    #expect(rendered[1].frames == 20 && played.frames.count == 20, "\(sample.name): \(rendered[1].frames)")
    #expect(abs(played.duration - 2000) <= 200, "\(sample.name): \(played.duration) ms")
    #expect(played.loops == 0)
    #expect(played.frames.allSatisfy { $0.end - $0.start == 100 })
    // The clips are 640x480: the preview is made of the clip's picture, whatever the still's size.
    #expect(rendered[1].size == PixelSize(width: 320, height: 240), "\(rendered[1].size)")
    // Frames differ: it moves.
    let first = try #require(played.frames.first?.image)
    let last = try #require(played.frames.last?.image)
    #expect(differenceOverGrey(first, last) > 2, "\(sample.name)")
    #expect((info.timings.decode ?? 0) > 0)
  }

  /// The default window is 3 s: a 3 s clip gives the whole clip (30 frames at 10 a second); a
  /// window longer than the clip gives the whole clip too.
  @Test func theWholeClipWhenItIsShorter() throws {
    var variants = Self.variants
    variants[1].animation?.previewSeconds = 10
    let (_, rendered) = try Thumbnailer().render(
      try MotionSamples.bytes("google-container.jpg"), variants: variants)
    let played = try Played(rendered[1].data)
    #expect(abs(played.duration - 3000) <= 300, "\(played.duration) ms")
  }

  /// A still has no motion: its animated variant is a still WebP, as for a still GIF.
  @Test func aPlainStillStaysAStill() throws {
    let (_, rendered) = try Thumbnailer().render(
      try MotionSamples.bytes("plain.jpg"), variants: Self.variants)
    #expect(rendered[1].frames == 1 && rendered[1].format == .webp)
  }
}
