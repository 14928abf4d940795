import Foundation
import TestSupport
import Testing
import ThumbCore

@testable import Imaging

/// Animated WebP: the first frame, as a viewer shows it, on the whole canvas.
@Suite struct AnimatedWebPTests {
  let thumbnailer = Thumbnailer()

  static func rgba(width: Int, height: Int, _ color: (UInt8, UInt8, UInt8, UInt8)) -> PixelBuffer {
    PixelBuffer(
      width: width, height: height, channels: 4,
      pixels: Array(
        [[UInt8]](repeating: [color.0, color.1, color.2, color.3], count: width * height).joined()))
  }

  /// A 100x80 canvas (opaque-white background colour in ANIM) whose first frame is a 40x30 red
  /// rectangle at (16, 8); the second frame, blue over the whole canvas, must not be what comes out.
  static let redOnCanvas = TestImages.animatedWebP(
    width: 100, height: 80,
    frames: [
      .init(image: rgba(width: 40, height: 30, (255, 0, 0, 255)), x: 16, y: 8),
      .init(image: rgba(width: 100, height: 80, (0, 0, 255, 255))),
    ], background: (255, 255, 255, 255))

  @Test func theFirstFrameIsComposedOnTheCanvas() throws {
    let source = try #require(
      try SourceDecoders.make(Self.redOnCanvas, maxPixels: 1_000_000) as? WebPSource)
    #expect(source.composesOnCanvas)
    #expect(source.header.storedSize == PixelSize(width: 100, height: 80) && source.header.hasAlpha)
    let decoded = try source.decode(requiredScale: 1, margin: 1)
    #expect(decoded.reduction == "1/1, first frame composed on the canvas")
    let canvas = decoded.image.interleaved()
    #expect(canvas.size == PixelSize(width: 100, height: 80) && canvas.channels == 4)
    func pixel(_ x: Int, _ y: Int) -> [UInt8] {
      Array(canvas.pixels[(y * 100 + x) * 4..<(y * 100 + x + 1) * 4])
    }
    // The frame's corners and middle are red, opaque.
    for (x, y) in [(16, 8), (55, 8), (16, 37), (55, 37), (35, 22)] {
      #expect(pixel(x, y) == [255, 0, 0, 255], "(\(x), \(y)) is \(pixel(x, y))")
    }
    // Just outside the frame and the canvas's corners: transparent, the ANIM colour only a hint.
    for (x, y) in [(15, 8), (56, 8), (16, 7), (16, 38), (0, 0), (99, 0), (0, 79), (99, 79)] {
      #expect(pixel(x, y)[3] == 0, "(\(x), \(y)) is \(pixel(x, y))")
    }
  }

  /// What `thumbd thumbnail` makes of it: outputs of the canvas's shape (5:4), not the frame's (4:3);
  /// JPEG flattens the transparent canvas onto white, as it does any alpha; `auto` keeps it as PNG.
  /// A first frame that paints four pixels of the canvas is nearly blank (FrameContent): passed over
  /// for the second, as a GIF's would be.
  @Test func aNearlyBlankFirstFrameIsPassedOver() throws {
    let speck = TestImages.animatedWebP(
      width: 100, height: 80,
      frames: [
        .init(image: Self.rgba(width: 2, height: 2, (0, 0, 0, 255)), x: 10, y: 10),
        .init(image: Self.rgba(width: 40, height: 30, (255, 0, 0, 255)), x: 16, y: 8),
      ])
    let source = try #require(try SourceDecoders.make(speck, maxPixels: 1_000_000) as? WebPSource)
    let decoded = try source.decode(requiredScale: 1, margin: 1)
    #expect(decoded.reduction == "frame 2 composed on the canvas")
    let canvas = decoded.image.interleaved()
    #expect(Array(canvas.pixels[(20 * 100 + 30) * 4..<(20 * 100 + 31) * 4]) == [255, 0, 0, 255])
  }

  @Test func rendersAtTheCanvasAspectRatio() throws {
    let (info, variants) = try thumbnailer.render(
      Self.redOnCanvas,
      variants: [variant("j", 50, 50, quality: 95), variant("p", 50, 50, format: .auto)])
    #expect(info.size == PixelSize(width: 100, height: 80) && info.hasAlpha)
    #expect(variants.map(\.size) == [PixelSize(width: 50, height: 40), PixelSize(width: 50, height: 40)])
    let jpeg = try JPEG.decode(variants[0].data)
    func rgb(_ x: Int, _ y: Int) -> [Double] { (0..<3).map { Double(jpeg.pixels[(y * 50 + x) * 3 + $0]) } }
    // The frame covers (8, 4) to (28, 19) at half size: red in the middle, white around it.
    #expect(near(rgb(18, 11), [255, 0, 0], 12), "\(rgb(18, 11))")
    for (x, y) in [(2, 2), (45, 35), (40, 10), (18, 30)] {
      #expect(near(rgb(x, y), [255, 255, 255], 8), "(\(x), \(y)) is \(rgb(x, y))")
    }
    #expect(variants[1].format == .png)
    let png = try decodeAny(variants[1].data)
    #expect(
      png.pixels[3] == 0 && Array(png.pixels[(11 * 50 + 18) * 4..<(11 * 50 + 19) * 4]) == [255, 0, 0, 255])
  }

  /// A first frame that covers the canvas is the canvas: decoded alone, as before, and so still
  /// scaled on load.
  @Test func aFirstFrameCoveringTheCanvasIsDecodedAlone() throws {
    // Green with a red band across a third of it: something to show.
    var first = Self.rgba(width: 1200, height: 800, (0, 128, 0, 255))
    for i in stride(from: 0, to: 1200 * 266 * 4, by: 4) { first.pixels[i] = 255 }
    let covering = TestImages.animatedWebP(
      width: 1200, height: 800,
      frames: [
        .init(image: first),
        .init(image: Self.rgba(width: 60, height: 40, (0, 0, 255, 255)), x: 10, y: 10),
      ])
    let source = try #require(try SourceDecoders.make(covering, maxPixels: 10_000_000) as? WebPSource)
    #expect(!source.composesOnCanvas)
    let (info, variants) = try thumbnailer.render(covering, variants: [variant("s", 300, 300)])
    #expect(info.reduction == "scaled to 600x400" && variants[0].size == PixelSize(width: 300, height: 200))
    let picture = try JPEG.decode(variants[0].data)
    #expect(
      near(
        Array(picture.pixels[(150 * 300 + 150) * 3..<(150 * 300 + 151) * 3]).map(Double.init), [0, 128, 0], 12
      ))
  }

  /// A first frame that covers the canvas but is one flat colour (an animation that starts blank) is
  /// passed over like a composed one: the thumbnail is the next frame that shows something, and the
  /// prediction counts the composing at full size.
  @Test func aBlankCoveringFirstFrameIsPassedOver() throws {
    let blank = TestImages.animatedWebP(
      width: 400, height: 300,
      frames: [
        .init(image: Self.rgba(width: 400, height: 300, (255, 255, 255, 255))),
        .init(image: Self.rgba(width: 200, height: 150, (0, 0, 255, 255)), x: 100, y: 76),
      ])
    let source = try #require(try SourceDecoders.make(blank, maxPixels: 10_000_000) as? WebPSource)
    #expect(!source.composesOnCanvas)
    let decoded = try source.decode(requiredScale: 0.25, margin: 1)
    #expect(decoded.reduction == "frame 2 composed on the canvas", "\(decoded.reduction)")
    let canvas = decoded.image.interleaved()
    #expect(Array(canvas.pixels[(150 * 400 + 200) * 4..<(150 * 400 + 201) * 4]) == [0, 0, 255, 255])
    let variants = [variant("s", 100, 100)]
    // Composed at full size: the canvas, RGBA, whatever the variants' scale.
    let predicted = source.estimate(variants: variants, margin: 2, fileBytes: blank.count)
    #expect(predicted.decoded >= 400 * 300 * 4 && predicted.codec >= 400 * 300 * 4, "\(predicted)")
  }

  /// A 3000x2000 canvas whose first frame is `frame` of noise (so the file has a realistic size) at
  /// `offset`.
  static func largeAnimation(
    frame: PixelSize = PixelSize(width: 1500, height: 1000), offset: (x: Int, y: Int) = (600, 400)
  ) -> [UInt8] {
    var noise = PixelBuffer(width: frame.width, height: frame.height, channels: 4)
    var seed: UInt32 = 7
    for i in 0..<noise.pixels.count {
      seed = seed &* 1_103_515_245 &+ 12345
      noise.pixels[i] = i % 4 == 3 ? 255 : UInt8(truncatingIfNeeded: seed >> 16)
    }
    return TestImages.animatedWebP(
      width: 3000, height: 2000,
      frames: [
        .init(image: noise, x: offset.x, y: offset.y),
        .init(image: rgba(width: 8, height: 8, (0, 0, 0, 255))),
      ])
  }

  /// The prediction a worker admits the decode with counts the full-size decode (the animation decoder
  /// cannot scale), its two canvases and the first frame's own buffer.
  @Test func thePredictionCountsTheCanvasesAtFullSize() throws {
    let file = Self.largeAnimation()
    let (canvas, frame) = (3000 * 2000, 1500 * 1000)
    let usual = try #require(thumbnailer.predictedPeak(of: file, variants: Profile.default.variants))
    let cheaper = try #require(
      thumbnailer.predictedPeak(of: file, variants: Profile.default.variants, economical: true))
    #expect(usual.decoded == canvas * 4 && usual.interleaved == canvas * 4)
    #expect(usual.codec == canvas * 4 + frame * 4)
    #expect(cheaper == usual, "no scaled decode to fall back on")
  }
}

/// The cost model against the real peak of rendering a composed animation: `thumbd bench memory`
/// renders the file in a child process and compares the prediction with the growth of its VmHWM.
@Suite(.enabled(if: ThumbdBinary.url != nil, Comment(rawValue: ThumbdBinary.skipReason)))
struct AnimatedWebPMemoryTests {
  /// A first frame of half the canvas's sides, and one as large as it can be and still need composing
  /// (offset by the smallest step, 2 pixels), the worst case for the frame's own buffer.
  @Test func thePredictionBoundsTheMeasuredPeak() throws {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("animated-\(UUID())")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let files = [
      ("half-frame.webp", AnimatedWebPTests.largeAnimation()),
      (
        "nearly-whole-frame.webp",
        AnimatedWebPTests.largeAnimation(frame: PixelSize(width: 2998, height: 1998), offset: (2, 2))
      ),
    ]
    for (name, bytes) in files { try Data(bytes).write(to: folder.appendingPathComponent(name)) }
    let (ratios, text) = try ThumbdBinary.memoryRatios(
      of: files.map { folder.appendingPathComponent($0.0).path }, rowsEndingIn: ".webp")
    print(text)
    #expect(ratios.count == 2, "\(text)")
    // Measured over predicted: never above 1 (the budget would be overrun), nor far below (the budget
    // would admit fewer jobs than fit).
    for ratio in ratios { #expect(ratio <= 1.0 && ratio >= 0.5, "\(text)") }
  }
}
