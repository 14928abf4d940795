import Foundation
import TestSupport
import Testing
import ThumbCore

@testable import Imaging

/// HDR stills (PQ and HLG HEIC and AVIF, PQ JPEG XL, BT.2020) come out as the SDR photograph they were made from
/// (Tests/Support/hdr-stills.py, BT.2408's SDR white at 203 cd/m²): within 20 levels of it with at
/// least 80% of its colour, through the tone map videos use.
@Suite(.enabled(if: HDRStills.isAvailable, Comment(rawValue: HDRStills.skipReason)))
struct HDRStillTests {
  static let full = [variant("full", 1200, 800, format: .png)]

  @Test(arguments: HDRStills.stills)
  func anHDRStillLooksLikeItsSDRPhotograph(_ still: HDRStills.Still) throws {
    let sdr = try decodeAny(try HDRStills.bytes(HDRStills.sdrPicture))
    // The header says HDR, whichever decoder reads it: the tone map's one entry (HDRSignal.toSDR).
    let header = try SourceDecoders.make(try HDRStills.bytes(still.name), maxPixels: 100_000_000).header
    #expect(header.color.hdr?.name == still.transfer, "\(still.name): \(header.color)")
    let (info, variants) = try Thumbnailer().render(try HDRStills.bytes(still.name), variants: Self.full)
    #expect(info.reduction.contains("\(still.transfer) tone-mapped"), "\(info.reduction)")
    let picture = try decodeAny(variants[0].data)
    try #require(picture.size == sdr.size)
    let mad = picture.meanAbsoluteDifference(to: sdr)
    let colour = picture.colourfulness / sdr.colourfulness
    #expect(
      mad <= 20, "\(still.name): \(mad) levels from the SDR photograph (untouched: \(still.untouchedMad))")
    #expect(
      colour >= 0.8, "\(still.name): \(colour) of its colour (untouched: \(still.untouchedColourRatio))")
  }
}
