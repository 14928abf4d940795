import Foundation
import TestSupport
import Testing
import ThumbCore

@testable import Imaging

/// HDR video posters come out as the SDR rendition of the same frame: clips made from an SDR photograph
/// as BT.2408 says (Tests/Support/hdr-clips.py) must land within 20 levels of it with at least 80% of its
/// colour, closer than ffmpeg's zscale + tonemap chain.
@Suite(.enabled(if: HDRClips.isAvailable, Comment(rawValue: HDRClips.skipReason)))
struct VideoHDRTests {
  static let full = [variant("full", 1280, 720, format: .png)]

  @Test(arguments: HDRClips.clips)
  func anHDRPosterLooksLikeItsSDRRendition(_ clip: HDRClips.Clip) throws {
    let sdr = try decodeAny(try HDRClips.bytes(HDRClips.sdrFrame))
    let header = try SourceDecoders.make(try HDRClips.bytes(clip.name), maxPixels: 100_000_000).header
    #expect(header.color.hdr?.name == clip.transfer, "\(clip.name): \(header.color)")
    let (info, variants) = try Thumbnailer().render(try HDRClips.bytes(clip.name), variants: Self.full)
    #expect(info.reduction.contains("\(clip.transfer) tone-mapped"), "\(info.reduction)")
    #expect(
      info.media?.dynamicRange == clip.transfer && info.media?.bitDepth == 10,
      "\(String(describing: info.media))")
    let poster = try decodeAny(variants[0].data)
    try #require(poster.size == sdr.size)
    let mad = poster.meanAbsoluteDifference(to: sdr)
    let colour = poster.colourfulness / sdr.colourfulness
    #expect(mad <= 20, "\(clip.name): \(mad) levels from the SDR frame")
    #expect(colour >= 0.8, "\(clip.name): \(colour) of the SDR frame's colour")
    #expect(mad < clip.ffmpegMad, "\(clip.name): \(mad) levels, ffmpeg's reference \(clip.ffmpegMad)")
  }

  /// Reduced 2x or more, the tone map runs at half size (a quarter of the work) and still matches the
  /// SDR clip rendered the same way.
  @Test func aReducedPosterIsToneMappedAtHalfSize() throws {
    let small = [variant("small", 640, 360, format: .png)]
    let (_, sdr) = try Thumbnailer().render(try HDRClips.bytes("sdr.mp4"), variants: small)
    for clip in HDRClips.clips {
      let (info, variants) = try Thumbnailer().render(try HDRClips.bytes(clip.name), variants: small)
      #expect(info.reduction.contains("1/2"), "\(info.reduction)")
      let mad = try decodeAny(variants[0].data).meanAbsoluteDifference(to: try decodeAny(sdr[0].data))
      #expect(mad <= 20, "\(clip.name) at 640x360: \(mad) levels from the SDR clip's poster")
    }
  }

  /// SDR videos are untouched: the SDR clip's poster is its frame.
  @Test func anSDRPosterIsNotToneMapped() throws {
    let header = try SourceDecoders.make(try HDRClips.bytes("sdr.mp4"), maxPixels: 100_000_000).header
    #expect(header.color.hdr == nil, "\(header.color)")
    let (info, variants) = try Thumbnailer().render(try HDRClips.bytes("sdr.mp4"), variants: Self.full)
    #expect(!info.reduction.contains("tone-mapped"))
    let mad = try decodeAny(variants[0].data).meanAbsoluteDifference(
      to: decodeAny(HDRClips.bytes(HDRClips.sdrFrame)))
    #expect(mad < 3, "\(mad)")
  }
}

/// The tone map's arithmetic, without a video.
struct ToneMapTests {
  @Test func theCurveIsTheIdentityUpToItsKneeThenRollsOffToThePeak() {
    let map = ToneMap(signal: .pq, primaries: .bt2020, peakNits: 1000, display: .bt1886)
    for m: Float in [0, 0.1, 0.5, ToneMap.knee] { #expect(map.curve(m) == m) }
    var last = map.curve(ToneMap.knee)
    for step in 1...100 {
      let m = ToneMap.knee + Float(step) * (map.peak - ToneMap.knee) / 100
      let y = map.curve(m)
      #expect(y > last && y <= 1, "\(m) -> \(y)")
      last = y
    }
    #expect(abs(map.curve(map.peak) - 1) < 1e-5)
    // Content no brighter than reference white needs no roll-off.
    let dim = ToneMap(signal: .pq, primaries: .bt2020, peakNits: 150, display: .bt1886)
    #expect(dim.curve(0.95) == 0.95)
  }

  /// BT.2408's reference points: an 18% grey card is shown at 26 cd/m², PQ 0.38 and HLG 0.38 (on a
  /// 1,000 cd/m² display); both come out where BT.1886 puts 26/203 of SDR white (108).
  @Test func referenceGreyLandsOnSDRGrey() {
    let grey = UInt8((pow(26.0 / 203, 1 / 2.4) * 255).rounded())
    let pq = ToneMap(signal: .pq, primaries: .bt2020, peakNits: 1000, display: .bt1886)
    let hlg = ToneMap(signal: .hlg, primaries: .bt2020, peakNits: nil, display: .bt1886)
    let pqCode = Float(0.38)
    let (r, g, b) = pq.map(pqCode, pqCode, pqCode)
    #expect(abs(Int(r) - Int(grey)) <= 2 && max(r, g, b) - min(r, g, b) <= 1, "PQ grey: \(r) \(g) \(b)")
    let (hr, hg, hb) = hlg.map(0.38, 0.38, 0.38)
    #expect(
      abs(Int(hr) - Int(grey)) <= 3 && max(hr, hg, hb) - min(hr, hg, hb) <= 1,
      "HLG grey: \(hr) \(hg) \(hb), wanted \(grey)")
    // Reference white (PQ 0.5807, HLG 0.75) sits above the knee: a little under full white.
    let (w, _, _) = pq.map(0.5807, 0.5807, 0.5807)
    #expect(w > 235 && w < 255, "PQ reference white: \(w)")
    let (hw, _, _) = hlg.map(0.75, 0.75, 0.75)
    #expect(hw > 235 && hw < 255, "HLG reference white: \(hw)")
  }

  /// BT.2020's pure green is outside BT.709: it is clipped into it, not wrapped, and stays green.
  @Test func wideGamutColoursAreConvertedToBT709() {
    let map = ToneMap(signal: .pq, primaries: .bt2020, peakNits: 1000, display: .sRGB)
    let (r, g, b) = map.map(0, 0.5, 0)
    #expect(g > 150 && r < 30 && b < 30, "\(r) \(g) \(b)")
  }
}

extension PixelBuffer {
  /// Mean |a - b| over every sample, in levels (0...255).
  func meanAbsoluteDifference(to other: PixelBuffer) -> Double {
    precondition(pixels.count == other.pixels.count)
    let total = zip(pixels, other.pixels).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }
    return Double(total) / Double(max(1, pixels.count))
  }

  /// The mean spread between a pixel's largest and smallest channel: 0 for greys.
  var colourfulness: Double {
    guard channels >= 3 else { return 0 }
    var total = 0
    for i in stride(from: 0, to: pixels.count, by: channels) {
      let (r, g, b) = (pixels[i], pixels[i + 1], pixels[i + 2])
      total += Int(max(r, g, b)) - Int(min(r, g, b))
    }
    return Double(total) / Double(max(1, pixels.count / channels))
  }
}
