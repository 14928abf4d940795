public import ThumbCore

/// A separable Lanczos-3 resampler over 8-bit planes, in single-precision floating point.
///
/// Each output row is made in two passes without an image-sized intermediate: the vertical pass sums
/// the source rows under the filter into one float row (16 samples at a time, a multiply-add per source
/// row), then the horizontal pass takes a dot product of that row with each output column's weights
/// (8 at a time). Only the source columns and rows the region touches are read.
public enum Resampler {
  /// Resamples `region` of `source` (in that plane's pixel coordinates) to exactly `output`.
  static func resample(_ source: Plane, region: Region, to output: PixelSize) -> Plane {
    resample(source, with: Weights(source.size, region: region, output: output))
  }

  /// The filter taps of both axes for one geometry. Cb and Cr of an image share theirs.
  struct Weights {
    let key: Key
    let horizontal: FilterWeights
    let vertical: FilterWeights

    struct Key: Equatable {
      var source: PixelSize
      var region: Region
      var output: PixelSize
    }

    init(_ source: PixelSize, region: Region, output: PixelSize) {
      key = Key(source: source, region: region, output: output)
      horizontal = FilterWeights(
        sourceLength: source.width, start: region.x, length: region.width, outputLength: output.width)
      vertical = FilterWeights(
        sourceLength: source.height, start: region.y, length: region.height, outputLength: output.height)
    }
  }

  static func resample(_ source: Plane, with weights: Weights) -> Plane {
    let (horizontal, vertical, output) = (weights.horizontal, weights.vertical, weights.key.output)
    let firstColumn = horizontal.firstSource
    let columns = horizontal.lastSourceEnd - firstColumn
    // Every byte is written (no padding).
    var result = Plane(width: output.width, height: output.height, zeroed: false)
    let outStride = result.stride
    // Zero padding past the last column: the horizontal pass reads whole vectors of taps.
    var row = [Float](repeating: 0, count: columns + horizontal.taps + FilterWeights.lanes)
    let srcStride = source.stride
    source.withUnsafeBufferPointer { src in
      result.withUnsafeMutableBufferPointer { dst in
        row.withUnsafeMutableBufferPointer { rowBuffer in
          vertical.weights.withUnsafeBufferPointer { vw in
            horizontal.weights.withUnsafeBufferPointer { hw in
              let rowPtr = rowBuffer.baseAddress!
              for oy in 0..<output.height {
                verticalPass(
                  source: src.baseAddress! + vertical.starts[oy] * srcStride + firstColumn,
                  stride: srcStride, count: vertical.counts[oy],
                  weights: vw.baseAddress! + oy * vertical.taps, into: rowPtr, columns: columns)
                horizontalPass(
                  row: rowPtr, firstColumn: firstColumn, weights: horizontal,
                  weightValues: hw.baseAddress!, into: dst.baseAddress! + oy * outStride)
              }
            }
          }
        }
      }
    }
    return result
  }

  @inline(__always)
  static func verticalPass(
    source: UnsafePointer<UInt8>, stride: Int, count: Int, weights: UnsafePointer<Float>,
    into row: UnsafeMutablePointer<Float>, columns: Int
  ) {
    var x = 0
    let raw = UnsafeMutableRawPointer(row)
    while x + 16 <= columns {
      var acc = SIMD16<Float>()
      var p = UnsafeRawPointer(source + x)
      for k in 0..<count {
        let v = p.loadUnaligned(as: SIMD16<UInt8>.self)
        acc.addProduct(floats(v), SIMD16(repeating: weights[k]))
        p += stride
      }
      raw.storeBytes(of: acc, toByteOffset: x * 4, as: SIMD16<Float>.self)
      x += 16
    }
    while x < columns {
      var acc: Float = 0
      var p = source + x
      for k in 0..<count {
        acc = acc.addingProduct(Float(p.pointee), weights[k])
        p += stride
      }
      row[x] = acc
      x += 1
    }
  }

  /// Bytes to floats without a conversion instruction: 2^23 + b has b in its low mantissa bits, so
  /// OR-ing the byte into 2^23's bit pattern and subtracting 2^23 gives b exactly. (The generic
  /// SIMD integer-to-float initialiser is not inlined, and its call spilled every accumulator.)
  @inline(__always)
  static func floats(_ bytes: SIMD16<UInt8>) -> SIMD16<Float> {
    let bits = SIMD16<UInt32>(truncatingIfNeeded: bytes) | 0x4B00_0000
    return unsafeBitCast(bits, to: SIMD16<Float>.self) - 8_388_608
  }

  @inline(__always)
  static func horizontalPass(
    row: UnsafeMutablePointer<Float>, firstColumn: Int, weights: FilterWeights,
    weightValues: UnsafePointer<Float>, into out: UnsafeMutablePointer<UInt8>
  ) {
    let taps = weights.taps
    weights.starts.withUnsafeBufferPointer { starts in
      var w = UnsafeRawPointer(weightValues)
      for ox in 0..<starts.count {
        var acc = SIMD8<Float>()
        var r = UnsafeRawPointer(row + (starts[ox] &- firstColumn))
        var k = 0
        while k < taps {
          acc.addProduct(r.loadUnaligned(as: SIMD8<Float>.self), w.loadUnaligned(as: SIMD8<Float>.self))
          r += 32
          w += 32
          k &+= 8
        }
        let four = acc.lowHalf + acc.highHalf
        let two = four.lowHalf + four.highHalf
        out[ox] = byte(two[0] + two[1])
      }
    }
  }

  /// A float rounded and clamped to 0...255 without a branch or a trapping conversion: adding 2^23
  /// rounds to the nearest integer, which then sits in the low mantissa bits.
  @inline(__always)
  static func byte(_ value: Float) -> UInt8 {
    let clamped = Swift.min(Swift.max(value, 0), 255)
    return UInt8(truncatingIfNeeded: (clamped + 8_388_608).bitPattern)
  }

  /// Resamples every plane of `image`. `region` and `output` are in full-size pixels; each plane takes
  /// its share by its subsampling, and comes out with `outputSubsampling` (default: the input's) and
  /// its grid shifted by `chromaShift` (PlanarImage.chromaShift).
  public static func resample(
    _ image: PlanarImage, region: Region, to output: PixelSize,
    outputSubsampling: [PlanarImage.Subsampling]? = nil, chromaShift: (x: Double, y: Double) = (0, 0)
  ) -> PlanarImage {
    let outSub = outputSubsampling ?? image.subsampling
    var weights: Weights? = nil
    // Source pixels per output pixel: the same for every plane in full-size units.
    let sx = region.width / Double(output.width)
    let sy = region.height / Double(output.height)
    var planes: [Plane] = []
    for (index, plane) in image.planes.enumerated() {
      let inSub = image.subsampling[index]
      let sub = outSub[index]
      let size = sub.planeSize(output)
      // Output sample j of this plane covers full-size output pixels [j*h, (j+1)*h): its centre maps
      // back to the source through the region, then into this source plane's own coordinates.
      // Shifted grids (PlanarImage.chromaShift) move a subsampled plane's samples, on either side.
      let outShift = (x: sub.horizontal > 1 ? chromaShift.x : 0, y: sub.vertical > 1 ? chromaShift.y : 0)
      let inShift = (
        x: inSub.horizontal > 1 ? image.chromaShift.x : 0, y: inSub.vertical > 1 ? image.chromaShift.y : 0
      )
      let planeRegion = Region(
        x: (region.x + outShift.x * sx - inShift.x) / Double(inSub.horizontal),
        y: (region.y + outShift.y * sy - inShift.y) / Double(inSub.vertical),
        width: Double(size.width * sub.horizontal) * sx / Double(inSub.horizontal),
        height: Double(size.height * sub.vertical) * sy / Double(inSub.vertical))
      let key = Weights.Key(source: plane.size, region: planeRegion, output: size)
      if weights?.key != key { weights = Weights(plane.size, region: planeRegion, output: size) }
      planes.append(resample(plane, with: weights!))
    }
    var result = PlanarImage(model: image.model, planes: planes, subsampling: outSub)
    result.chromaShift = chromaShift
    return result
  }

  /// Interleaved in, interleaved out (tools and tests): four channels are taken as straight RGBA.
  public static func resample(_ image: PixelBuffer, region: Region, to output: PixelSize) -> PixelBuffer {
    resample(PlanarImage(interleaved: image), region: region, to: output).interleaved()
  }
}
