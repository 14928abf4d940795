/// The rows of a plane reduced by an integer box (the mean of `factorX` x `factorY` source samples),
/// made on demand for the Lanczos step that follows and kept in a ring of `slots` rows, so that no
/// reduced plane is ever allocated: the resampler's memory stays what MemoryCostModel predicts.
///
/// Why a box first: Lanczos-3 reads about six source samples per output sample on each axis for any
/// reduction, so a 3.2x reduction reads 19 rows per output row. A box of 2 first leaves a Lanczos step
/// of 1.6x on a quarter of the samples, for one add per source sample (libvips' shrink before its
/// reduce, Pillow's `reducing_gap`). The box's blur near the output's Nyquist frequency is small
/// when the Lanczos step that follows still reduces by `Resampler.lanczosGap` or more.
///
/// A partial block at the right or bottom edge is the mean of the samples it has, so the reduced
/// sample k always stands for source samples [k f, (k+1) f) and the geometry is the source's divided by f.
final class BoxRows {
  let factorX: Int
  let factorY: Int
  /// The reduced plane's size.
  let width: Int
  let height: Int
  private let source: UnsafePointer<UInt8>
  private let sourceStride: Int
  private let sourceWidth: Int
  private let sourceHeight: Int
  /// Reduced columns [firstColumn, endColumn) are made; the Lanczos step reads no others.
  private let firstColumn: Int
  private let endColumn: Int
  private let slots: Int
  private let ring: UnsafeMutablePointer<UInt8>
  private var rowInSlot: [Int]
  /// Per source column of the span read, the sum of the block's rows (`mean` only).
  private var columnSums: [UInt32]

  init(
    source: UnsafePointer<UInt8>, stride: Int, width: Int, height: Int, factorX: Int, factorY: Int,
    columns: Range<Int>, slots: Int
  ) {
    self.source = source
    self.sourceStride = stride
    self.sourceWidth = width
    self.sourceHeight = height
    self.factorX = factorX
    self.factorY = factorY
    self.width = (width + factorX - 1) / factorX
    self.height = (height + factorY - 1) / factorY
    self.firstColumn = columns.lowerBound
    self.endColumn = columns.upperBound
    self.slots = max(1, slots)
    // 32 bytes of slack: the SIMD path reads whole vectors up to the end of its last block.
    ring = .allocate(capacity: self.slots * self.width + 32)
    rowInSlot = Array(repeating: -1, count: self.slots)
    columnSums = Array(repeating: 0, count: columns.count * factorX + 16)
  }

  deinit { ring.deallocate() }

  /// Reduced row `y`, indexed from column 0 (only [firstColumn, endColumn) are valid). Rows must be
  /// asked for in a window of at most `slots` that only moves down.
  func row(_ y: Int) -> UnsafePointer<UInt8> {
    let slot = y % slots
    let out = ring + slot * width
    if rowInSlot[slot] != y {
      make(y, into: out)
      rowInSlot[slot] = y
    }
    return UnsafePointer(out)
  }

  private func make(_ y: Int, into out: UnsafeMutablePointer<UInt8>) {
    let top = y * factorY
    let rowCount = min(factorY, sourceHeight - top)
    if (factorX == 2 && factorY <= 16) || (factorX == 4 && factorY <= 15) {
      narrowBlocks(top: top, rowCount: rowCount, into: out)
    } else {
      mean(top: top, rowCount: rowCount, into: out)
    }
  }

  /// Blocks two or four samples wide (2 x 2 for 4:2:0 chroma, 2 x 4 for 4:2:2, 4 x 4 for 4:4:4 reduced
  /// 6x or more): 32 bytes of each of the block's rows summed in 16 bits (at most 60 x 255), then pairs
  /// of columns added once or twice, each sum divided by a multiplication. The remaining columns (and a
  /// partial block at the edge) go through `mean`.
  private func narrowBlocks(top: Int, rowCount: Int, into out: UnsafeMutablePointer<UInt8>) {
    let rows = (0..<rowCount).map { source + (top + $0) * sourceStride }
    let n = UInt32(factorX * rowCount)
    let reciprocal = Self.reciprocal(n)
    let perStep = 32 / factorX
    var x = firstColumn
    while x + perStep <= endColumn && factorX * x + 32 <= sourceWidth {
      var columnSums = SIMD32<UInt16>()
      for row in rows {
        columnSums &+= widen(UnsafeRawPointer(row + factorX * x).loadUnaligned(as: SIMD32<UInt8>.self))
      }
      let pairs = columnSums.evenHalf &+ columnSums.oddHalf
      if factorX == 4 {
        let quads = pairs.evenHalf &+ pairs.oddHalf
        for i in 0..<8 {
          out[x + i] = UInt8(truncatingIfNeeded: ((UInt32(quads[i]) + n / 2) &* reciprocal) >> 20)
        }
      } else {
        var wide = SIMD16<UInt32>()
        for i in 0..<16 { wide[i] = UInt32(pairs[i]) }
        let means = ((wide &+ n / 2) &* reciprocal) &>> 20
        var bytes = SIMD16<UInt8>()
        for i in 0..<16 { bytes[i] = UInt8(truncatingIfNeeded: means[i]) }
        UnsafeMutableRawPointer(out + x).storeBytes(of: bytes, as: SIMD16<UInt8>.self)
      }
      x += perStep
    }
    if x < endColumn { mean(top: top, rowCount: rowCount, into: out, from: x) }
  }

  /// ceil(2^20 / n): for a sum of n bytes plus n / 2 (x <= 256 n) and n < 64, (x * reciprocal(n)) >> 20
  /// is x / n rounded down, exactly: the excess, below x / 2^20 <= n / 4096, is less than 1 / n, the
  /// least distance of a quotient with a remainder from the next integer.
  static func reciprocal(_ n: UInt32) -> UInt32 { ((1 << 20) + n - 1) / n }

  /// Any factors: the block's rows summed into per-column sums (sixteen columns at a time), then each
  /// reduced sample the rounded mean of its block's column sums.
  private func mean(top: Int, rowCount: Int, into out: UnsafeMutablePointer<UInt8>, from start: Int? = nil) {
    let firstColumn = start ?? self.firstColumn
    let left = firstColumn * factorX
    let right = min(endColumn * factorX, sourceWidth)
    let span = right - left
    columnSums.withUnsafeMutableBufferPointer { sums in
      let base = sums.baseAddress!
      let raw = UnsafeMutableRawPointer(base)
      for dy in 0..<rowCount {
        let p = source + (top + dy) * sourceStride + left
        var x = 0
        while x + 16 <= span {
          let bytes = UnsafeRawPointer(p + x).loadUnaligned(as: SIMD16<UInt8>.self)
          var wide = SIMD16<UInt32>()
          for i in 0..<16 { wide[i] = UInt32(bytes[i]) }
          let sum = dy == 0 ? wide : raw.loadUnaligned(fromByteOffset: x * 4, as: SIMD16<UInt32>.self) &+ wide
          raw.storeBytes(of: sum, toByteOffset: x * 4, as: SIMD16<UInt32>.self)
          x += 16
        }
        while x < span {
          base[x] = (dy == 0 ? 0 : base[x]) &+ UInt32(p[x])
          x += 1
        }
      }
      // Division by a multiplication: ceil(2^32 / n) is exact for sums this small.
      let n = UInt64(rowCount * factorX)
      let reciprocal = ((1 << 32) + n - 1) / n
      for x in firstColumn..<endColumn {
        let first = x * factorX - left
        let columnCount = min(factorX, right - x * factorX)
        var sum: UInt32 = 0
        for dx in 0..<columnCount { sum &+= base[first + dx] }
        if columnCount == factorX {
          out[x] = UInt8(truncatingIfNeeded: ((UInt64(sum) + n / 2) &* reciprocal) >> 32)
        } else {
          let partial = UInt32(rowCount * columnCount)
          out[x] = UInt8(truncatingIfNeeded: (sum + partial / 2) / partial)
        }
      }
    }
  }

  /// Bytes to 16-bit lanes, lane by lane so that LLVM makes it two zero-extensions.
  @inline(__always)
  private func widen(_ bytes: SIMD32<UInt8>) -> SIMD32<UInt16> {
    var result = SIMD32<UInt16>()
    for i in 0..<32 { result[i] = UInt16(bytes[i]) }
    return result
  }
}
