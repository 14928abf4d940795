import CHEVCDecoder
import ThumbCore

/// thumbd's own route for HEIC's HEVC pictures: every tile decoded by libavcodec (CHEVCDecoder) straight
/// into the picture's Y, Cb and Cr planes (a grid's partial edge tiles cut while they are placed), and
/// the turns (irot) left to the output stage as an orientation, as for a JPEG's EXIF. libheif 1.15
/// instead converts each tile to RGB, assembles the grid in RGB and turns the whole picture, which
/// costs about as much as decoding it.
enum HEVCTiles {
  /// How the route turns `item`'s samples into RGB, or why it leaves the picture to libheif: it decodes
  /// 8-bit 4:2:0, 4:2:2 and 4:4:4 pictures whose tiles decode to the size their `ispe` states, with a
  /// matrix thumbd knows, turned by `irot`. Range and matrix come from the `nclx` box, else the stream's
  /// VUI, else H.265's defaults (HEVCItem.signal), as libheif takes them. Anything else (more bits,
  /// monochrome, a crop, a mirror, a tile whose SPS says another size) goes to libheif, which the
  /// differential tests (HEIFDifferentialTests) hold both routes to.
  static func route(of item: HEVCItem) -> Route {
    let sps = item.sequence
    guard item.lumaBits == 8, item.chromaBits == 8, sps.lumaBits == 8, sps.chromaBits == 8 else {
      return .libheif("\(max(item.lumaBits, sps.lumaBits))-bit samples")
    }
    guard (1...3).contains(item.chromaFormat), sps.chromaFormat == item.chromaFormat,
      !sps.separateColourPlanes
    else { return .libheif(item.chromaFormat == 0 ? "monochrome" : "chroma format \(sps.chromaFormat)") }
    guard sps.outputWidth == item.tileSize.width, sps.outputHeight == item.tileSize.height else {
      return .libheif("tiles decode to \(sps.outputWidth)x\(sps.outputHeight), ispe says \(item.tileSize)")
    }
    // A clean aperture and a mirror stay libheif's: on the generated matrix the route drew a mirrored
    // picture and half-pixel crop edges otherwise than libheif 1.15 (which also crops a grid after
    // upsampling its chroma, a single picture before), and libheif is the reference.
    if item.crop != nil { return .libheif("clean aperture") }
    if item.transforms.contains(where: { if case .mirror = $0 { true } else { false } }) {
      return .libheif("mirror")
    }
    let signal = item.signal
    guard let coding = YCbCrCoding(h273: signal.matrix, fullRange: signal.fullRange) else {
      return .libheif("matrix \(signal.matrix)")
    }
    return .own(coding)
  }

  enum Route: Equatable {
    case own(YCbCrCoding)
    /// libheif decodes it, for the reason given.
    case libheif(String)
  }

  /// libavcodec's `max_pixels` for pictures of at most `size`: it checks the decoded picture, padded to
  /// whole coding blocks (up to 64 samples more) with its width aligned for SIMD (up to 64 more), so a
  /// limit of exactly `size.pixels` refuses pictures whose size is odd or not a multiple of 64.
  static func codedLimit(_ size: PixelSize) -> Int64 {
    Int64((size.width + 128) * (size.height + 64))
  }

  static func chromaFactors(_ format: Int) -> PlanarImage.Subsampling {
    switch format {
    case 1: return PlanarImage.Subsampling(horizontal: 2, vertical: 2)
    case 2: return PlanarImage.Subsampling(horizontal: 2, vertical: 1)
    default: return .none
    }
  }

  /// Outputs at most this fraction of the picture's size are made from a decode without HEVC's
  /// deblocking and SAO filters. Measured on five HEICs (two phones', IMG_5195, two generated grids;
  /// their 1600 variant is 0.40-0.48 of them): SSIM Y against a libheif decode resampled in float moved
  /// by at most 0.0001 on any variant (mean 0.0000), for about 5% less decode time.
  static let loopFilterScale = 0.5

  /// Decodes `item` of `file` into planes in stored orientation (after the crop, before the turns).
  /// `skipLoopFilters`: without deblocking and SAO, for outputs reduced 2x or more.
  static func decode(
    _ item: HEVCItem, coding: YCbCrCoding, file: OwnedBytes, skipLoopFilters: Bool = false
  ) throws(JobError) -> PlanarImage {
    let window =
      item.crop ?? (x: 0, y: 0, width: item.size.width, height: item.size.height)
    let chroma = chromaFactors(item.chromaFormat)
    let size = PixelSize(width: window.width, height: window.height)
    var planes = [
      Plane(width: size.width, height: size.height, zeroed: false),
      Plane(width: chroma.planeSize(size).width, height: chroma.planeSize(size).height, zeroed: false),
      Plane(width: chroma.planeSize(size).width, height: chroma.planeSize(size).height, zeroed: false),
    ]
    // No coded picture may be larger than a tile.
    thumbd_hevc_begin(codedLimit(item.tileSize), skipLoopFilters ? 1 : 0)
    defer { thumbd_hevc_end() }
    let parameterSets = item.parameterSets
    try withMutablePlanePointers(&planes) { (destinations) throws(JobError) in
      for (index, extents) in item.tiles.enumerated() {
        let origin = (
          x: (index % item.columns) * item.tileSize.width, y: (index / item.columns) * item.tileSize.height
        )
        // The part of the window this tile covers, in picture coordinates.
        let left = max(origin.x, window.x)
        let top = max(origin.y, window.y)
        let right = min(origin.x + item.tileSize.width, window.x + window.width)
        let bottom = min(origin.y + item.tileSize.height, window.y + window.height)
        guard left < right, top < bottom else { continue }
        var picture = thumbd_hevc_picture()
        let status = Self.decodeTile(
          extents, parameterSets: parameterSets, lengthSize: item.lengthSize, file: file, into: &picture)
        guard status == 0 else {
          throw JobError(.corruptImage, "HEIF image data: \(String(cString: thumbd_hevc_last_error()))")
        }
        guard Int(picture.width) == item.tileSize.width, Int(picture.height) == item.tileSize.height,
          Int(picture.chroma) == item.chromaFormat
        else {
          throw JobError(
            .corruptImage,
            "HEIF image data: a tile decodes to \(picture.width)x\(picture.height), its item says \(item.tileSize)"
          )
        }
        let sources = [picture.planes.0, picture.planes.1, picture.planes.2]
        let strides = [Int(picture.strides.0), Int(picture.strides.1), Int(picture.strides.2)]
        for p in 0..<3 {
          let f = p == 0 ? PlanarImage.Subsampling.none : chroma
          // Whole samples: even crops and tile sizes keep subsampled edges on the grid; a partial
          // sample at the picture's right or bottom edge rounds up.
          let x0 = (left - origin.x) / f.horizontal
          let y0 = (top - origin.y) / f.vertical
          let x1 = (right - origin.x + f.horizontal - 1) / f.horizontal
          let y1 = (bottom - origin.y + f.vertical - 1) / f.vertical
          let dx = (left - window.x) / f.horizontal
          let dy = (top - window.y) / f.vertical
          let planeWidth = p == 0 ? size.width : chroma.planeSize(size).width
          let planeHeight = p == 0 ? size.height : chroma.planeSize(size).height
          let count = min(x1 - x0, planeWidth - dx)
          let rows = min(y1 - y0, planeHeight - dy)
          guard let source = sources[p], count > 0, rows > 0 else { continue }
          for row in 0..<rows {
            (destinations[p] + (dy + row) * planeWidth + dx).update(
              from: source + (y0 + row) * strides[p] + x0, count: count)
          }
        }
      }
    }
    var image = PlanarImage(model: .yCbCr, planes: planes, subsampling: [.none, chroma, chroma])
    image.yCbCrCoding = coding
    return image
  }

  /// One tile: its extents joined when there are several (rare), else read where they lie.
  private static func decodeTile(
    _ extents: [Range<Int>], parameterSets: [UInt8], lengthSize: Int, file: OwnedBytes,
    into picture: inout thumbd_hevc_picture
  ) -> Int32 {
    parameterSets.withUnsafeBufferPointer { sets in
      if extents.count == 1, let extent = extents.first {
        return thumbd_hevc_decode(
          sets.baseAddress, sets.count, file.pointer.assumingMemoryBound(to: UInt8.self) + extent.lowerBound,
          extent.count, Int32(lengthSize), &picture)
      }
      var joined: [UInt8] = []
      for extent in extents {
        joined += UnsafeBufferPointer(
          start: file.pointer.assumingMemoryBound(to: UInt8.self) + extent.lowerBound, count: extent.count)
      }
      return joined.withUnsafeBufferPointer { data in
        thumbd_hevc_decode(
          sets.baseAddress, sets.count, data.baseAddress, data.count, Int32(lengthSize), &picture)
      }
    }
  }
}
