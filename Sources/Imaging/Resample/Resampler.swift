public import ThumbCore

/// A separable Lanczos-3 resampler over 8-bit planes, in single-precision floating point.
///
/// Each output row is made in two passes without an image-sized intermediate: the vertical pass adds
/// the source rows under the filter into one float row (four rows at a time, 16 samples per step),
/// then the horizontal pass takes the dot products of that row with eight output columns' weights at
/// a time. Only the source columns and rows the region touches are read; a large reduction may read
/// them through an integer box first (BoxRows).
public enum Resampler {
  /// Resamples `region` of `source` (in that plane's pixel coordinates) to exactly `output`.
  /// `gap: nil` leaves out the box pre-reduction (tests compare with it).
  static func resample(_ source: Plane, region: Region, to output: PixelSize, gap: Double? = lumaGap) -> Plane
  {
    resample(source, with: Weights(source.size, region: region, output: output, gap: gap))
  }

  /// The Lanczos step after a box pre-reduction (BoxRows) still reduces by at least the gap: the box is
  /// an integer factor f = floor(scale / gap) on each axis, used when f is 2 or more. Luma keeps
  /// libvips' and Pillow's gap of 2; chroma, which the output subsamples again and the eye resolves
  /// less, takes a box sooner.
  static let lumaGap = 2.0
  static let chromaGap = 1.5

  static func boxFactor(sourceSamplesPerOutput scale: Double, gap: Double = lumaGap) -> Int {
    max(1, Int(scale / gap + 1e-9))
  }

  /// The filter taps of both axes for one geometry, and the box pre-reduction before them. Cb and Cr
  /// of an image share theirs.
  struct Weights {
    let key: Key
    let boxX: Int
    let boxY: Int
    /// On the box-reduced plane's grid when there is a box.
    let horizontal: FilterWeights
    let vertical: FilterWeights

    struct Key: Equatable {
      var source: PixelSize
      var region: Region
      var output: PixelSize
      var gap: Double?
    }

    init(_ source: PixelSize, region: Region, output: PixelSize, gap: Double?) {
      key = Key(source: source, region: region, output: output, gap: gap)
      boxX = gap.map { boxFactor(sourceSamplesPerOutput: region.width / Double(output.width), gap: $0) } ?? 1
      boxY =
        gap.map { boxFactor(sourceSamplesPerOutput: region.height / Double(output.height), gap: $0) } ?? 1
      let (fx, fy) = (Double(boxX), Double(boxY))
      horizontal = FilterWeights(
        sourceLength: (source.width + boxX - 1) / boxX, start: region.x / fx, length: region.width / fx,
        outputLength: output.width)
      vertical = FilterWeights(
        sourceLength: (source.height + boxY - 1) / boxY, start: region.y / fy, length: region.height / fy,
        outputLength: output.height)
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
      let box =
        weights.boxX == 1 && weights.boxY == 1
        ? nil
        : BoxRows(
          source: src.baseAddress!, stride: srcStride, width: source.width, height: source.height,
          factorX: weights.boxX, factorY: weights.boxY,
          columns: firstColumn..<(firstColumn + columns), slots: (vertical.counts.max() ?? 1) + 1)
      result.withUnsafeMutableBufferPointer { dst in
        row.withUnsafeMutableBufferPointer { rowBuffer in
          vertical.weights.withUnsafeBufferPointer { vw in
            horizontal.weights.withUnsafeBufferPointer { hw in
              let rowPtr = rowBuffer.baseAddress!
              for oy in 0..<output.height {
                let start = vertical.starts[oy]
                verticalPass(
                  count: vertical.counts[oy], weights: vw.baseAddress! + oy * vertical.taps, into: rowPtr,
                  columns: columns
                ) { k in
                  if let box { return box.row(start + k) + firstColumn }
                  return src.baseAddress! + (start + k) * srcStride + firstColumn
                }
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

  /// Sums `count` source rows (row(k) gives the k-th, from the first column the output reads) under
  /// `weights` into the float row.
  @inline(__always)
  static func verticalPass(
    count: Int, weights: UnsafePointer<Float>, into row: UnsafeMutablePointer<Float>, columns: Int,
    row source: (Int) -> UnsafePointer<UInt8>
  ) {
    let vectorColumns = columns & ~15
    let out = UnsafeMutableRawPointer(row)
    var k = 0
    while k < count {
      let p0 = source(k)
      let p1 = k + 1 < count ? source(k + 1) : p0
      let p2 = k + 2 < count ? source(k + 2) : p0
      let p3 = k + 3 < count ? source(k + 3) : p0
      let (r0, r1, r2, r3) = (
        UnsafeRawPointer(p0), UnsafeRawPointer(p1), UnsafeRawPointer(p2), UnsafeRawPointer(p3)
      )
      let ws = (
        weights[k], k + 1 < count ? weights[k + 1] : 0, k + 2 < count ? weights[k + 2] : 0,
        k + 3 < count ? weights[k + 3] : 0
      )
      let (w0, w1, w2, w3) = (
        SIMD16(repeating: ws.0), SIMD16(repeating: ws.1), SIMD16(repeating: ws.2), SIMD16(repeating: ws.3)
      )
      let first = k == 0
      var x = 0
      while x < vectorColumns {
        var sum = first ? SIMD16<Float>() : out.loadUnaligned(fromByteOffset: x &* 4, as: SIMD16<Float>.self)
        sum.addProduct(floats(r0.loadUnaligned(fromByteOffset: x, as: SIMD16<UInt8>.self)), w0)
        sum.addProduct(floats(r1.loadUnaligned(fromByteOffset: x, as: SIMD16<UInt8>.self)), w1)
        sum.addProduct(floats(r2.loadUnaligned(fromByteOffset: x, as: SIMD16<UInt8>.self)), w2)
        sum.addProduct(floats(r3.loadUnaligned(fromByteOffset: x, as: SIMD16<UInt8>.self)), w3)
        out.storeBytes(of: sum, toByteOffset: x &* 4, as: SIMD16<Float>.self)
        x &+= 16
      }
      while x < columns {
        var sum = first ? 0 : row[x]
        sum += Float(p0[x]) * ws.0 + Float(p1[x]) * ws.1 + Float(p2[x]) * ws.2 + Float(p3[x]) * ws.3
        row[x] = sum
        x += 1
      }
      k += 4
    }
  }

  /// Bytes to floats, written lane by lane so that LLVM makes it one zero-extension and one conversion
  /// per eight lanes. (The generic SIMD conversion initialisers are not inlined: their call spilled
  /// every accumulator.)
  @inline(__always)
  static func floats(_ bytes: SIMD16<UInt8>) -> SIMD16<Float> {
    var result = SIMD16<Float>()
    for i in 0..<16 { result[i] = Float(bytes[i]) }
    return result
  }

  /// Eight output samples at a time: eight independent dot products (no chain of dependent adds), then
  /// one transposing reduction of the eight accumulators and one vector conversion to bytes. The
  /// remainder, fewer than eight, one at a time.
  @inline(__always)
  static func horizontalPass(
    row: UnsafeMutablePointer<Float>, firstColumn: Int, weights: FilterWeights,
    weightValues: UnsafePointer<Float>, into out: UnsafeMutablePointer<UInt8>
  ) {
    let taps = weights.taps
    weights.starts.withUnsafeBufferPointer { starts in
      let count = starts.count
      let base = UnsafeRawPointer(row - firstColumn)
      let w = UnsafeRawPointer(weightValues)
      let tapBytes = taps * 4
      var ox = 0
      while ox + 8 <= count {
        var a0 = SIMD8<Float>()
        var a1 = SIMD8<Float>()
        var a2 = SIMD8<Float>()
        var a3 = SIMD8<Float>()
        var a4 = SIMD8<Float>()
        var a5 = SIMD8<Float>()
        var a6 = SIMD8<Float>()
        var a7 = SIMD8<Float>()
        let r0 = base + starts[ox] &* 4
        let r1 = base + starts[ox &+ 1] &* 4
        let r2 = base + starts[ox &+ 2] &* 4
        let r3 = base + starts[ox &+ 3] &* 4
        let r4 = base + starts[ox &+ 4] &* 4
        let r5 = base + starts[ox &+ 5] &* 4
        let r6 = base + starts[ox &+ 6] &* 4
        let r7 = base + starts[ox &+ 7] &* 4
        let w0 = w + ox &* tapBytes
        var k = 0
        while k < tapBytes {
          a0.addProduct(load(r0, k), load(w0, k))
          a1.addProduct(load(r1, k), load(w0, tapBytes &+ k))
          a2.addProduct(load(r2, k), load(w0, 2 &* tapBytes &+ k))
          a3.addProduct(load(r3, k), load(w0, 3 &* tapBytes &+ k))
          a4.addProduct(load(r4, k), load(w0, 4 &* tapBytes &+ k))
          a5.addProduct(load(r5, k), load(w0, 5 &* tapBytes &+ k))
          a6.addProduct(load(r6, k), load(w0, 6 &* tapBytes &+ k))
          a7.addProduct(load(r7, k), load(w0, 7 &* tapBytes &+ k))
          k &+= 32
        }
        let sums = pairSums(
          pairSums(pairSums(a0, a1), pairSums(a2, a3)), pairSums(pairSums(a4, a5), pairSums(a6, a7)))
        storeBytes(sums, to: out + ox)
        ox &+= 8
      }
      while ox < count {
        var acc = SIMD8<Float>()
        let r = base + starts[ox] &* 4
        let wr = w + ox &* tapBytes
        var k = 0
        while k < tapBytes {
          acc.addProduct(load(r, k), load(wr, k))
          k &+= 32
        }
        let four = acc.lowHalf + acc.highHalf
        let two = four.lowHalf + four.highHalf
        out[ox] = byte(two[0] + two[1])
        ox &+= 1
      }
    }
  }

  @inline(__always)
  static func load(_ pointer: UnsafeRawPointer, _ offset: Int) -> SIMD8<Float> {
    pointer.loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self)
  }

  /// Lanes 0-3: the sums of `a`'s neighbouring pairs; lanes 4-7: `b`'s. Three rounds of this turn eight
  /// accumulators into one vector whose lane j is the total of accumulator j.
  @inline(__always)
  static func pairSums(_ a: SIMD8<Float>, _ b: SIMD8<Float>) -> SIMD8<Float> {
    SIMD8(lowHalf: a.evenHalf + a.oddHalf, highHalf: b.evenHalf + b.oddHalf)
  }

  /// `byte` for eight lanes at once, stored to `out`. Adding 1.5 x 2^23 puts round(value) in the low
  /// mantissa bits for negative values too; the clamp is then two integer comparisons, which LLVM turns
  /// into a signed max, a min and two packs. (pointwiseMin and pointwiseMax are not inlined.)
  @inline(__always)
  static func storeBytes(_ values: SIMD8<Float>, to out: UnsafeMutablePointer<UInt8>) {
    let biased = unsafeBitCast(values + SIMD8(repeating: 12_582_912), to: SIMD8<Int32>.self)
    var x = biased &- 0x4B40_0000
    x = x & ~(x &>> 31)
    x = (x | ((255 &- x) &>> 31)) & 255
    UnsafeMutableRawPointer(out).storeBytes(of: SIMD8<UInt8>(truncatingIfNeeded: x), as: SIMD8<UInt8>.self)
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
      let gap = image.model == .yCbCr && index > 0 ? chromaGap : lumaGap
      let key = Weights.Key(source: plane.size, region: planeRegion, output: size, gap: gap)
      if weights?.key != key { weights = Weights(plane.size, region: planeRegion, output: size, gap: gap) }
      planes.append(resample(plane, with: weights!))
    }
    var result = PlanarImage(model: image.model, planes: planes, subsampling: outSub)
    result.chromaShift = chromaShift
    result.yCbCrCoding = image.yCbCrCoding
    return result
  }

  /// Interleaved in, interleaved out (tools and tests): four channels are taken as straight RGBA.
  public static func resample(_ image: PixelBuffer, region: Region, to output: PixelSize) -> PixelBuffer {
    resample(PlanarImage(interleaved: image), region: region, to: output).interleaved()
  }
}
