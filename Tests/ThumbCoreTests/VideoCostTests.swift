import Testing

@testable import ThumbCore

/// The video cost model (MemoryCostModel.video) as a pure function: what the default settings admit,
/// and what it counts for each kind of stream. Its figures against measured peaks are held by
/// VideoCostMeasurementTests (ImagingTests) and docs/benchmarks/memory.md ("Videos").
struct VideoCostTests {
  let variants = Profile.default.variants
  let budget = 256 << 20

  func cost(
    _ codec: VideoStreamShape.Codec, _ width: Int, _ height: Int, bits: Int = 8, rewritten: Bool = true,
    toneMapped: Bool = false, held: Int = 4 << 20, orientation: Orientation = .up
  ) -> Int {
    let stream = VideoStreamShape(
      codec: codec, coded: PixelSize(width: width, height: height), bitDepth: bits,
      keyframesRewritten: rewritten, standIns: rewritten ? 0 : 4)
    return MemoryCostModel.video(
      stream: stream, stored: stream.coded, orientation: orientation, heldBytes: held, toneMapped: toneMapped,
      variants: variants
    ).total
  }

  /// Two 4K phone videos fit the default budget at once, and an 8K one fits it alone.
  @Test func phoneVideosFitTheDefaultBudget() {
    for toneMapped in [false, true] {
      #expect(cost(.hevc, 3840, 2160, bits: 10, toneMapped: toneMapped) < budget / 2)
    }
    #expect(cost(.h264, 1920, 1080) < 64 << 20)
    #expect(cost(.hevc, 7680, 4320, bits: 10) < budget)
    #expect(cost(.h264, 7680, 4320, held: 24 << 20) < budget)
    #expect(cost(.hevc, 7680, 4320, bits: 10) > 96 << 20, "8K stays over a 96 MiB budget")
  }

  /// Deeper samples take two bytes; a keyframe that names pictures it lacks (not rewritten) costs a
  /// stand-in picture and a motion field per reference more; a turn costs nothing.
  @Test func whatEachPartCounts() {
    #expect(cost(.hevc, 3840, 2160, bits: 10) > cost(.hevc, 3840, 2160, bits: 8))
    let stand = cost(.hevc, 3840, 2160, bits: 10, rewritten: false) - cost(.hevc, 3840, 2160, bits: 10)
    let picture = VideoStreamShape(codec: .hevc, coded: PixelSize(width: 3840, height: 2160), bitDepth: 10)
      .pictureBytes
    #expect(stand > picture && stand < 3 * picture, "stand-ins: \(stand) for pictures of \(picture)")
    #expect(
      cost(.hevc, 3840, 2160, bits: 10, orientation: .rotated90Clockwise) == cost(.hevc, 3840, 2160, bits: 10)
    )
    // An unknown bit depth is taken as the deeper one.
    #expect(cost(.hevc, 3840, 2160, bits: 0) == cost(.hevc, 3840, 2160, bits: 10))
    // The held bytes count twice (the job's copy and the decoder's).
    #expect(cost(.h264, 1920, 1080, held: 40 << 20) - cost(.h264, 1920, 1080, held: 20 << 20) >= 40 << 20)
  }

  @Test func pictureBytesFollowTheChroma() {
    let size = PixelSize(width: 1920, height: 1080)
    let yuv420 = VideoStreamShape(codec: .h264, coded: size, bitDepth: 8)
    var yuv444 = yuv420
    yuv444.chromaShift = (0, 0)
    var gray = yuv420
    gray.gray = true
    #expect(yuv420.samplesPerPixel == 1.5 && yuv444.samplesPerPixel == 3 && gray.samplesPerPixel == 1)
    #expect(yuv444.pictureBytes == 2 * yuv420.pictureBytes)
    #expect(yuv420.pictureBytes >= size.pixels * 3 / 2)
  }
}
