import Foundation

extension SmartCrop {
  /// The `entropy` strategy: the window whose luma histogram has the highest Shannon entropy, the most
  /// information. libvips trims the less informative side step by step; this scores every position
  /// instead, which is as cheap on an analysis picture and cannot be led off by a greedy first step.
  enum Entropy {
    /// Every window position's entropy in bits. The window slides in a snake (right along one row, down,
    /// left along the next), so each step moves one row or column of pixels between histogram bins;
    /// the entropy is then summed over the 256 bins from exact counts, so equal histograms give equal
    /// scores (a running sum would drift, and break the ties `bestOrigin` relies on).
    static func windowScores(_ image: CropAnalysisImage, window: PixelSize) -> [Double] {
      let (w, ww, wh) = (image.width, window.width, window.height)
      let columns = image.width - ww + 1
      let rows = image.height - wh + 1
      let n = ww * wh
      // c·log2(c) for every count a bin can reach: H = log2(n) - Σ c·log2(c) / n.
      let cLogC = (0...n).map { $0 == 0 ? 0 : Double($0) * log2(Double($0)) }
      let logN = log2(Double(n))
      var histogram = [Int](repeating: 0, count: 256)
      var scores = [Double](repeating: 0, count: columns * rows)
      image.luma.withUnsafeBufferPointer { luma in
        func move(x: Int, y: Int, from leaving: Int, to entering: Int, along horizontal: Bool) {
          // One column (horizontal slide) or row (vertical slide) of the window changes.
          for k in 0..<(horizontal ? wh : ww) {
            let (out, into) =
              horizontal
              ? ((y + k) * w + leaving, (y + k) * w + entering) : (leaving * w + x + k, entering * w + x + k)
            histogram[Int(luma[out])] -= 1
            histogram[Int(luma[into])] += 1
          }
        }
        for y in 0..<wh {
          for x in 0..<ww { histogram[Int(luma[y * w + x])] += 1 }
        }
        var x = 0
        for y in 0..<rows {
          if y > 0 { move(x: x, y: y, from: y - 1, to: y + wh - 1, along: false) }
          let forward = y % 2 == 0
          for step in 0..<columns {
            if step > 0 {
              if forward {
                move(x: x, y: y, from: x, to: x + ww, along: true)
                x += 1
              } else {
                move(x: x, y: y, from: x + ww - 1, to: x - 1, along: true)
                x -= 1
              }
            }
            var sum = 0.0
            for count in histogram { sum += cLogC[count] }
            scores[y * columns + x] = max(0, logN - sum / Double(n))
          }
        }
      }
      return scores
    }
  }
}
