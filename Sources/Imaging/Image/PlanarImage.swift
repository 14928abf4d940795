public import ThumbCore

/// How an image's planes are to be read.
public enum ColorModel: Sendable, Equatable {
  /// One plane of luminance.
  case gray
  /// A luma and two colour differences, Cb and Cr possibly subsampled: JPEG's (full-range BT.601, as
  /// JFIF defines it) or HEIF's (PlanarImage.yCbCrCoding says which).
  case yCbCr
  case rgb
  /// Red, green, blue premultiplied by alpha (so resampling does not bleed the colour of transparent
  /// pixels into their neighbours), then alpha.
  case rgba
  /// CMYK as libjpeg delivers Adobe files: inverted, 0 meaning full ink.
  case invertedCMYK

  public var planeCount: Int {
    switch self {
    case .gray: return 1
    case .yCbCr, .rgb: return 3
    case .rgba, .invertedCMYK: return 4
    }
  }

  public var hasAlpha: Bool { self == .rgba }
}

/// An image as separate 8-bit planes. Planes make every resampling pass a run over contiguous bytes
/// (vectorised well), let JPEG's subsampled chroma be resampled at its own size, and let a JPEG be decoded
/// to and encoded from YCbCr without converting to RGB and back.
public struct PlanarImage: Sendable {
  public var model: ColorModel
  public var planes: [Plane]
  /// Per plane, how many full-size pixels one of its samples spans across and down (2, 2 for 4:2:0
  /// chroma; 1, 1 for everything else).
  public var subsampling: [Subsampling]
  /// Where the subsampled planes' grid starts, in full-size pixels: sample k spans
  /// [shift + k·factor, shift + (k+1)·factor). 0 as JPEG defines it; -1 on an axis of odd length that
  /// the output will flip, so that the grid starts at the upright image's origin once flipped.
  public var chromaShift: (x: Double, y: Double) = (0, 0)
  /// What the samples of a `.yCbCr` image mean: JPEG's JFIF, or what a HEIF file says.
  public var yCbCrCoding = YCbCrCoding.jfif

  public struct Subsampling: Sendable, Equatable {
    public var horizontal: Int
    public var vertical: Int
    public static let none = Subsampling(horizontal: 1, vertical: 1)

    public init(horizontal: Int, vertical: Int) {
      self.horizontal = horizontal
      self.vertical = vertical
    }

    var transposed: Subsampling { Subsampling(horizontal: vertical, vertical: horizontal) }

    /// The size of a plane with this subsampling for an image of `size` (partial samples round up).
    func planeSize(_ size: PixelSize) -> PixelSize {
      PixelSize(
        width: (size.width + horizontal - 1) / horizontal, height: (size.height + vertical - 1) / vertical)
    }
  }

  public init(model: ColorModel, planes: [Plane], subsampling: [Subsampling]? = nil) {
    precondition(planes.count == model.planeCount, "\(model) needs \(model.planeCount) planes")
    self.model = model
    self.planes = planes
    self.subsampling = subsampling ?? Array(repeating: .none, count: planes.count)
  }

  /// The size of the picture (plane 0 is never subsampled).
  public var size: PixelSize { planes[0].size }

  public var byteCount: Int { planes.map(\.byteCount).reduce(0, +) }

  /// Splits an interleaved image into planes; four-channel input is taken as RGBA with straight alpha
  /// and premultiplied on the way.
  public init(interleaved image: PixelBuffer) {
    let model: ColorModel = image.channels == 1 ? .gray : image.channels == 4 ? .rgba : .rgb
    self = image.pixels.withUnsafeBufferPointer {
      PlanarImage(interleaved: $0.baseAddress!, size: image.size, stride: image.rowBytes, model: model)
    }
  }

  /// Splits interleaved 8-bit pixels (a byte per plane of `model`, rows `stride` bytes apart) into
  /// planes. RGBA is premultiplied on the way unless `premultiplied` says it is already.
  init(
    interleaved base: UnsafePointer<UInt8>, size: PixelSize, stride: Int, model: ColorModel,
    premultiplied: Bool = false
  ) {
    var planes = (0..<model.planeCount).map { _ in
      Plane(width: size.width, height: size.height, zeroed: false)
    }
    withMutablePlanePointers(&planes) { dst in
      for y in 0..<size.height {
        Self.split(
          row: base + y * stride, width: size.width, into: dst, at: y * size.width,
          premultiplying: model == .rgba && !premultiplied)
      }
    }
    self.init(model: model, planes: planes)
  }

  /// One interleaved row of `planes.count` channels into the planes at `offset` (packed rows); the
  /// colour of four-channel RGBA times alpha / 255, rounded, when `premultiplying`.
  static func split(
    row: UnsafePointer<UInt8>, width: Int, into planes: [UnsafeMutablePointer<UInt8>], at offset: Int,
    premultiplying: Bool
  ) {
    let c = planes.count
    if c == 3 {  // the common case, unrolled
      for x in 0..<width {
        planes[0][offset + x] = row[x * 3]
        planes[1][offset + x] = row[x * 3 + 1]
        planes[2][offset + x] = row[x * 3 + 2]
      }
    } else if premultiplying {
      for x in 0..<width {
        let a = row[x * 4 + 3]
        planes[3][offset + x] = a
        for ch in 0..<3 { planes[ch][offset + x] = UInt8((UInt32(row[x * 4 + ch]) * UInt32(a) + 127) / 255) }
      }
    } else {
      for x in 0..<width {
        for ch in 0..<c { planes[ch][offset + x] = row[x * c + ch] }
      }
    }
  }

  /// Every plane turned upright.
  func oriented(_ orientation: Orientation) -> PlanarImage {
    if orientation == .up { return self }
    // The shift was chosen so that the turned planes start at the origin.
    var turned = PlanarImage(
      model: model, planes: planes.map { $0.oriented(orientation) },
      subsampling: orientation.swapsDimensions ? subsampling.map(\.transposed) : subsampling)
    turned.yCbCrCoding = yCbCrCoding
    return turned
  }
}

extension PlanarImage {
  /// The planes interleaved into one buffer: gray stays one channel, YCbCr becomes RGB, RGBA is
  /// un-premultiplied, CMYK stays four (inverted) channels for a colour transform to read. Every plane
  /// must be full size.
  public func interleaved() -> PixelBuffer {
    precondition(subsampling.allSatisfy { $0 == .none }, "interleave needs full-size planes")
    let (w, h) = (size.width, size.height)
    let c = model == .gray ? 1 : model == .yCbCr || model == .rgb ? 3 : 4
    var out = PixelBuffer(width: w, height: h, channels: c)
    out.pixels.withUnsafeMutableBufferPointer { dst in
      withPlanePointers { p in
        for y in 0..<h {
          var d = y * w * c
          switch model {
          case .gray:
            for x in 0..<w { dst[d + x] = p[0][y * planes[0].stride + x] }
          case .yCbCr:
            let conversion = yCbCrCoding.fixedPoint
            for x in 0..<w {
              let rgb = conversion.rgb(
                y: p[0][y * planes[0].stride + x], cb: p[1][y * planes[1].stride + x],
                cr: p[2][y * planes[2].stride + x])
              dst[d] = rgb.0
              dst[d + 1] = rgb.1
              dst[d + 2] = rgb.2
              d += 3
            }
          case .rgb, .invertedCMYK:
            for x in 0..<w {
              for ch in 0..<c { dst[d + ch] = p[ch][y * planes[ch].stride + x] }
              d += c
            }
          case .rgba:
            for x in 0..<w {
              let a = p[3][y * planes[3].stride + x]
              for ch in 0..<3 {
                let v = p[ch][y * planes[ch].stride + x]
                dst[d + ch] = a == 0 ? 0 : UInt8(min(255, (UInt32(v) * 255 + UInt32(a) / 2) / UInt32(a)))
              }
              dst[d + 3] = a
              d += 4
            }
          }
        }
      }
    }
    return out
  }

  /// Every plane's base pointer at once, read-only. A plane's storage never moves (PlaneStorage), so the
  /// pointers hold while the planes are kept alive.
  func withPlanePointers<R>(_ body: ([UnsafePointer<UInt8>]) -> R) -> R {
    let pointers = planes.map { plane in plane.withUnsafeBufferPointer { $0.baseAddress! } }
    return withExtendedLifetime(planes) { body(pointers) }
  }
}

extension Orientation {
  /// The chroma grid shift (PlanarImage.chromaShift) for an output of `storedOutput` made in stored
  /// orientation: -1 on each stored axis that turning upright reverses, when its length is odd, so that
  /// the subsampled samples line up with the upright image's origin as JPEG decoders expect.
  func chromaShift(storedOutput size: PixelSize) -> (x: Double, y: Double) {
    let reversesX = [.mirrored, .rotated180, .transverse, .rotated90CounterClockwise].contains(self)
    let reversesY = [.rotated180, .mirroredVertically, .rotated90Clockwise, .transverse].contains(self)
    return (reversesX && size.width % 2 == 1 ? -1 : 0, reversesY && size.height % 2 == 1 ? -1 : 0)
  }
}
