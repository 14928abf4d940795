import Foundation
import TestSupport
import Testing
import ThumbCore

@testable import Imaging

/// An animated WebP as a viewer plays it, through libwebp's animation decoder (not thumbd's encoder):
/// each frame (straight RGBA) with when it starts and ends, in milliseconds, and the loop count.
struct Played {
  var frames: [(image: PixelBuffer, start: Int, end: Int)] = []
  var loops: Int

  init(_ data: [UInt8]) throws {
    let source = try WebPSource(data)
    loops = source.loopCount
    let animation = try WebPAnimation(OwnedBytes(data))
    let canvas = animation.canvas
    var start = 0
    while let (image, end) = try animation.withNextFrame({ rows, end in
      (
        PlanarImage(
          interleaved: rows, size: canvas, stride: canvas.width * 4, model: .rgba, premultiplied: true
        ).interleaved(), end
      )
    }) {
      frames.append((image, start, end))
      start = end
    }
  }

  var duration: Int { frames.last?.end ?? 0 }

  /// The frame on screen at `time`.
  func shown(at time: Int) -> PixelBuffer? {
    frames.first { $0.start <= time && time < $0.end }?.image
  }
}

/// Mean absolute difference of two pictures as seen over mid grey (so that transparency counts, and the
/// colour under a transparent pixel does not).
func differenceOverGrey(_ a: PixelBuffer, _ b: PixelBuffer) -> Double {
  guard a.width == b.width, a.height == b.height else { return .infinity }
  func seen(_ p: PixelBuffer, _ i: Int, _ c: Int) -> Int {
    guard p.channels == 4 else { return Int(p.pixels[i * p.channels + c]) }
    let alpha = Int(p.pixels[i * 4 + 3])
    return (Int(p.pixels[i * 4 + c]) * alpha + 128 * (255 - alpha) + 127) / 255
  }
  var total = 0
  for i in 0..<(a.width * a.height) {
    for c in 0..<3 { total += abs(seen(a, i, c) - seen(b, i, c)) }
  }
  return Double(total) / Double(a.width * a.height * 3)
}

func animatedVariant(
  _ width: Int, _ height: Int, fit: Fit = .inside, crop: CropStrategy = .centre, quality: Int = 95,
  limits: AnimationLimits = .default
) -> VariantSpec {
  VariantSpec(
    name: "moving", width: width, height: height, fit: fit, format: .webp, quality: quality, crop: crop,
    animation: limits)
}

/// `"animated": true`: an animated GIF or WebP becomes an animated WebP whose frames are the source's as
/// a browser plays them, shown for the same times, up to the profile's limits; a still stays a still.
@Suite(.enabled(if: GIFMatrix.isAvailable, Comment(rawValue: GIFMatrix.skipReason)))
struct AnimatedVariantTests {
  static let animations = GIFMatrix.cases.filter { $0.animation != nil }

  @Test func theMatrixHasAnimations() {
    #expect(Self.animations.count >= 8, "\(Self.animations.map(\.name))")
  }

  /// Every frame of every animation of the matrix (disposals, transparency, local palettes, frames
  /// cropped to what changed, overhanging frames), at the canvas's size: the picture on screen at each
  /// source frame's start is that frame's composited canvas, each frame lasts as long, and the whole
  /// plays as long and as many times.
  @Test(arguments: animations)
  func eachFramePlaysForItsTime(_ gif: GIFMatrix.Case) throws {
    let played = try #require(gif.animation)
    let (width, height) = (gif.size![0], gif.size![1])
    let (_, out) = try Thumbnailer().render(
      try GIFMatrix.bytes(gif.name), variants: [animatedVariant(width, height)])
    let result = try Played(out[0].data)
    let starts = played.indices.map { k in played[..<k].map(\.duration).reduce(0, +) }
    #expect(result.duration == played.map(\.duration).reduce(0, +), "\(gif.name)")
    #expect(out[0].frames == played.count && result.frames.count <= played.count)
    // The encoder may merge a frame into the one before when nothing changed; it never starts a frame
    // where the source has none.
    for frame in result.frames {
      #expect(starts.contains(frame.start), "\(gif.name): a frame at \(frame.start) ms")
    }
    let references = try played.map { try decodeAny(try GIFMatrix.bytes($0.reference)) }
    for (k, start) in starts.enumerated() {
      let shown = try #require(result.shown(at: start))
      let own = differenceOverGrey(shown, references[k])
      #expect(own <= 4, "\(gif.name): frame \(k) is \(own) levels off its canvas")
      // And it is that frame, not a neighbour: closer to its own canvas than to the frame before's or
      // after's, where they differ.
      for other in [k - 1, k + 1]
      where references.indices.contains(other)
        && differenceOverGrey(references[other], references[k]) > 1
      {
        #expect(
          own < differenceOverGrey(shown, references[other]), "\(gif.name): frame \(k) looks like \(other)")
      }
    }
    // Browsers play a GIF with a loop count of N N + 1 times; WebP counts plays.
    #expect(result.loops == gif.loop.map { $0 == 0 ? 0 : $0 + 1 } ?? 1, "\(gif.name)")
  }

  /// The motion GIF (24 frames of 40, 80 and 0 ms) resized and cropped: still every frame at its time.
  @Test func aResizedAnimationKeepsItsTimeline() throws {
    let gif = try #require(Self.animations.first { $0.name == "motion.gif" })
    let played = try #require(gif.animation)
    let (_, out) = try Thumbnailer().render(
      try GIFMatrix.bytes(gif.name),
      variants: [animatedVariant(120, 120), animatedVariant(64, 64, fit: .cover, crop: .attention)])
    #expect(out.map(\.size) == [PixelSize(width: 120, height: 68), PixelSize(width: 64, height: 64)])
    for variant in out {
      let result = try Played(variant.data)
      #expect(result.duration == played.map(\.duration).reduce(0, +))
      #expect(result.frames.count >= 20, "\(variant.name): \(result.frames.count) frames")
      #expect(result.frames.map { $0.end - $0.start }.prefix(3) == [40, 40, 40])
      #expect(result.loops == 3)
    }
  }

  /// The limits: the frames from the first while there are at most `maxFrames` and they last at most
  /// `maxSeconds` together; the first frame always.
  static let limitCases: [(AnimationLimits, Int)] = [
    (AnimationLimits(maxFrames: 5, maxSeconds: 10), 200),
    (AnimationLimits(maxFrames: 100, maxSeconds: 0.5), 480),
    (AnimationLimits(maxFrames: 12, maxSeconds: 0.5), 480),
    // One frame kept: a still WebP, which has no duration.
    (AnimationLimits(maxFrames: 100, maxSeconds: 0.01), 0),
    (AnimationLimits(maxFrames: 1, maxSeconds: 600), 0),
  ]

  @Test(arguments: limitCases)
  func theLimitsCutTheAnimation(_ limits: AnimationLimits, _ duration: Int) throws {
    let bytes = try GIFMatrix.bytes("motion.gif")
    let (_, out) = try Thumbnailer().render(bytes, variants: [animatedVariant(240, 135, limits: limits)])
    let result = try Played(out[0].data)
    #expect(result.duration == duration, "\(limits)")
    #expect(result.frames.count <= limits.maxFrames)
    #expect(out[0].frames == min(limits.maxFrames, duration == 0 ? 1 : duration == 200 ? 5 : 11))
  }

  /// Without a NETSCAPE block a GIF plays once, and so does its animation.
  @Test func aGIFWithoutALoopBlockPlaysOnce() throws {
    var bytes = try GIFMatrix.bytes("motion.gif")
    let block = Array("NETSCAPE2.0".utf8)
    let at = try #require(
      (0..<(bytes.count - block.count)).first { bytes[$0..<($0 + block.count)].elementsEqual(block) })
    bytes.removeSubrange((at - 3)..<(at + block.count + 5))
    #expect(GIFStructure.read(bytes)?.loopCount == nil && GIFStructure.read(bytes)?.frames == 24)
    let (_, out) = try Thumbnailer().render(bytes, variants: [animatedVariant(120, 120)])
    #expect(try Played(out[0].data).loops == 1)
  }

  /// An animated WebP original: its frames (offset, blended, disposed) and durations, as played.
  @Test func anAnimatedWebPKeepsItsFramesAndDurations() throws {
    let colours: [(UInt8, UInt8, UInt8)] = [(220, 40, 40), (40, 200, 60), (40, 60, 220), (240, 220, 40)]
    let durations = [50, 120, 70, 200]
    let frames = colours.indices.map { k in
      var image = PixelBuffer(width: 60, height: 40, channels: 4)
      for i in 0..<(60 * 40) {
        image.pixels[i * 4] = colours[k].0
        image.pixels[i * 4 + 1] = colours[k].1
        image.pixels[i * 4 + 2] = colours[k].2
        image.pixels[i * 4 + 3] = 255
      }
      return TestImages.AnimationFrame(image: image, x: 20 * k, y: 10 * (k % 2), duration: durations[k])
    }
    for loops in [0, 2] {
      let file = TestImages.animatedWebP(width: 120, height: 80, frames: frames, loops: loops)
      let source = try Played(file)
      let (info, out) = try Thumbnailer().render(file, variants: [animatedVariant(60, 60)])
      #expect(info.format == .webp && out[0].size == PixelSize(width: 60, height: 40))
      let result = try Played(out[0].data)
      #expect(result.frames.map { $0.end - $0.start } == durations)
      #expect(result.loops == loops)
      for (k, frame) in result.frames.enumerated() {
        let expected = Resampler.resample(
          PlanarImage(interleaved: source.frames[k].image), region: Region(PixelSize(width: 120, height: 80)),
          to: PixelSize(width: 60, height: 40)
        ).interleaved()
        #expect(differenceOverGrey(frame.image, expected) <= 4, "frame \(k)")
      }
    }
  }

  /// A still original with an animated variant: a still WebP, as without `animated`.
  @Test func aStillStaysAStill() throws {
    let gif = try GIFMatrix.bytes("static-opaque.gif")
    let (_, out) = try Thumbnailer().render(gif, variants: [animatedVariant(150, 150)])
    let source = try WebPSource(out[0].data)
    #expect(source.frameCount == 1 && out[0].frames == 1 && out[0].size == PixelSize(width: 150, height: 100))
    // A variant without `animated` of an animated original is its shown frame, one frame.
    let (_, stills) = try Thumbnailer().render(
      try GIFMatrix.bytes("motion.gif"),
      variants: [VariantSpec(name: "s", width: 120, height: 120, fit: .inside, format: .webp, quality: 90)])
    #expect(try WebPSource(stills[0].data).frameCount == 1 && stills[0].frames == 1)
  }

  /// Bombs stay bounded: 500 frames (the first shown 100 ms, the rest 20 ms) and 10,000 (each 10 ms,
  /// shown 100) stop at the default 100 frames and 10 s, quickly. The 10,000 are one transparent pixel
  /// each, the same picture throughout: the encoder makes one still of them.
  static let bombCases: [(String, Int)] = [("500-frames.gif", 2080), ("10000-blank-frames.gif", 0)]

  @Test(arguments: bombCases)
  func manyFramesStopAtTheLimits(_ name: String, _ duration: Int) throws {
    let started = ContinuousClock.now
    let (_, out) = try Thumbnailer().render(try GIFMatrix.bytes(name), variants: [animatedVariant(60, 60)])
    let result = try Played(out[0].data)
    #expect(
      out[0].frames == 100 && result.duration == duration, "\(result.duration) ms, \(out[0].frames) kept")
    #expect(started.duration(to: .now) < .seconds(5))
  }

  /// Every frame is composed on the whole canvas: an animation stops where its frames would pass
  /// `animationPixelBudget` canvas pixels altogether, however small the frames are.
  @Test func aHugeCanvasStopsAtThePixelBudget() throws {
    let side = 4000
    var bytes =
      Array("GIF89a".utf8) + [UInt8(side & 255), UInt8(side >> 8), UInt8(side & 255), UInt8(side >> 8)]
    bytes += [0x80, 0, 0] + [0, 0, 0, 255, 255, 255]
    bytes += [0x21, 0xFF, 0x0B] + Array("NETSCAPE2.0".utf8) + [3, 1, 0, 0, 0]
    for k in 0..<40 {
      // A 1x1 white frame, shown 100 ms, at a different place each time.
      bytes += [0x21, 0xF9, 4, 4, 10, 0, 0, 0]
      bytes += [0x2C, UInt8(k), 0, 0, 0, 1, 0, 1, 0, 0, 2, 2, 0x4C, 0x01, 0]
    }
    bytes += [0x3B]
    let (_, out) = try Thumbnailer().render(bytes, variants: [animatedVariant(100, 100)])
    let frames = Thumbnailer.animationPixelBudget / (side * side)
    #expect(try Played(out[0].data).duration == frames * 100)
  }
}

/// The cost model against the real peak of making animated variants: `thumbd bench memory --profile`
/// renders each GIF in a child process and compares the prediction with the growth of its VmHWM.
@Suite(
  .enabled(if: ThumbdBinary.url != nil && GIFMatrix.isAvailable, Comment(rawValue: ThumbdBinary.skipReason)))
struct AnimatedVariantMemoryTests {
  @Test func thePredictionBoundsTheMeasuredPeak() throws {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("animated-\(UUID())")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let spec = folder.appendingPathComponent("animated.json")
    try Data(
      #"""
      {"variants": [{"name": "m", "width": 480, "height": 480, "format": "webp", "animated": true},
                    {"name": "s", "width": 160, "height": 160, "format": "webp", "animated": true},
                    {"name": "still", "width": 320, "height": 320}]}
      """#.utf8
    ).write(to: spec)
    let files = try ["motion.gif", "500-frames.gif", "dispose-previous.gif"].map { name in
      let path = folder.appendingPathComponent(name)
      try Data(try GIFMatrix.bytes(name)).write(to: path)
      return path.path
    }
    let (ratios, text) = try ThumbdBinary.memoryRatios(of: files, rowsEndingIn: ".gif", profile: spec.path)
    print(text)
    #expect(ratios.count == 3, "\(text)")
    // Never above 1 (the budget would be overrun); the encoded frames are counted as for content that
    // compresses far worse than these, so the floor is lower than a still's.
    for ratio in ratios { #expect(ratio <= 1.0 && ratio >= 0.25, "\(text)") }
  }
}
