import CHEVCDecoder
import TestSupport
import Testing
import ThumbCore

@testable import Imaging

/// thumbd's own HEVC route (HEVCTiles: tiles straight into YCbCr planes, turns as an orientation)
/// against libheif's (RGB, assembled and turned by libheif, decoded by the libavcodec plugin): the same
/// pictures, upright, on real phone files.
@Suite(.enabled(if: SharedCorpus.isAvailable, Comment(rawValue: SharedCorpus.skipReason)))
struct HEVCRouteTests {
  /// Both routes' decodes, upright and reduced to at most 400 pixels a side, as RGB.
  func bothRoutes(_ path: String) throws -> (tiles: PixelBuffer, libheif: PixelBuffer, tiled: HEIFSource) {
    let bytes = try SharedCorpus.bytes(path)
    let tiled = try HEIFSource(bytes, format: .heif, maxPixels: 100_000_000)
    let plain = try HEIFSource(bytes, format: .heif, maxPixels: 100_000_000, tiles: false)
    func reduced(_ source: HEIFSource) throws -> PixelBuffer {
      let image = try source.decode(requiredScale: 1, margin: 1).image
      let upright = source.header.uprightSize
      let scale = 400.0 / Double(max(upright.width, upright.height))
      let output = PixelSize(
        width: Int((Double(upright.width) * scale).rounded()),
        height: Int((Double(upright.height) * scale).rounded()))
      let stored = source.header.orientation.uprightSize(of: output)
      let full = Region(x: 0, y: 0, width: Double(image.size.width), height: Double(image.size.height))
      return Resampler.resample(
        image, region: full, to: stored,
        outputSubsampling: Array(repeating: .none, count: image.planes.count),
        chromaShift: (0, 0)
      ).oriented(source.header.orientation).interleaved()
    }
    return (try reduced(tiled), try reduced(plain), tiled)
  }

  @Test(arguments: [
    "phone/drewnoakes__IMG_2927.HEIC", "phone/drewnoakes__Issue_487.heic", "heic/IMG_5195.HEIC",
    "heic/example.heic",
  ])
  func theTiledRouteShowsWhatLibheifShows(path: String) throws {
    let (tiles, libheif, tiled) = try bothRoutes(path)
    #expect(tiled.usesTiles, "\(path) goes through thumbd's own route")
    #expect(tiles.size == libheif.size)
    // libheif upsamples chroma by repeating samples; the route resamples them: a little apart at edges.
    let difference = meanDifference(tiles, libheif)
    #expect(difference < 1.5, "\(path): mean difference \(difference)")
  }

  @Test func irotBecomesTheOrientationAndTheStoredSizeIsTheCodedOne() throws {
    let source = try HEIFSource(
      try SharedCorpus.bytes("phone/drewnoakes__Issue_487.heic"), format: .heif, maxPixels: 100_000_000)
    #expect(source.usesTiles)
    #expect(source.header.orientation == .rotated90Clockwise)
    #expect(source.header.storedSize == PixelSize(width: 4032, height: 3024))
    #expect(source.header.uprightSize == PixelSize(width: 3024, height: 4032))
  }

  /// libheif's own decodes (AVIF aside) go through the libavcodec plugin, not libde265.
  @Test func libheifDecodesHEVCWithThePlugin() throws {
    let before = thumbd_hevc_pictures_decoded()
    let plain = try HEIFSource(
      try SharedCorpus.bytes("heic/example.heic"), format: .heif, maxPixels: 100_000_000, tiles: false)
    _ = try plain.decode(requiredScale: 1, margin: 1)
    #expect(thumbd_hevc_pictures_decoded() > before)
  }

  /// Damaged coded data, not container: a run of tile bytes overwritten ends in a decoded picture
  /// (libavcodec conceals) or a corrupt_image error, on either route; never a crash.
  @Test func damagedTileDataIsAnErrorOrAPictureNeverACrash() throws {
    let original = try SharedCorpus.bytes("phone/drewnoakes__IMG_2927.HEIC")
    let item = try #require(HEVCItem.readPrimary(original))
    for (index, tile) in item.tiles.enumerated() where index % 7 == 0 {
      var bytes = original
      let extent = tile[0]
      let start = extent.lowerBound + extent.count / 3
      for at in start..<min(start + 600, extent.upperBound) { bytes[at] = UInt8(truncatingIfNeeded: at * 31) }
      for tiles in [true, false] {
        do {
          let source = try HEIFSource(bytes, format: .heif, maxPixels: 100_000_000, tiles: tiles)
          let image = try source.decode(requiredScale: 0.1, margin: 1).image
          #expect(image.size.pixels > 0)
        } catch {
          #expect(error.code == .corruptImage, "\(error)")
        }
      }
    }
  }
}

/// The loop filters are skipped only when every output is reduced 2x or more; skipping changes the
/// decoded pixels (so the setting reaches libavcodec), and only a little.
@Suite struct LoopFilterSkipTests {
  @Test func onlyReducedOutputsSkipTheLoopFilters() throws {
    var picture = PixelBuffer(width: 1024, height: 768, channels: 3)
    for y in 0..<768 {
      for x in 0..<1024 {
        let i = (y * 1024 + x) * 3
        picture.pixels[i] = UInt8((x * 7 + y * 3) & 0xFF)
        picture.pixels[i + 1] = UInt8((x ^ y) & 0xFF)
        picture.pixels[i + 2] = UInt8(y * 255 / 768)
      }
    }
    let file = try HEIFEncoder.encode(picture, quality: 30, codec: .hevc)
    let source = try HEIFSource(file, format: .heif, maxPixels: 100_000_000)
    #expect(source.usesTiles)
    let whole = try source.decode(requiredScale: 1, margin: 2)
    let reduced = try source.decode(requiredScale: 0.5, margin: 2)
    #expect(whole.reduction == "1/1")
    #expect(reduced.reduction == "1/1, loop filters skipped")
    let (a, b) = (whole.image.planes[0], reduced.image.planes[0])
    var differing = 0
    var total = 0
    a.withUnsafeBufferPointer { p in
      b.withUnsafeBufferPointer { q in
        for i in 0..<p.count where p[i] != q[i] {
          differing += 1
          total += abs(Int(p[i]) - Int(q[i]))
        }
      }
    }
    #expect(differing > 0, "the filters were not skipped")
    #expect(
      Double(total) / Double(a.width * a.height) < 2,
      "mean luma change \(Double(total) / Double(a.width * a.height))")
  }
}
