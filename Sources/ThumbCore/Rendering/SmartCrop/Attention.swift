extension SmartCrop {
  /// libvips' and sharp's `attention` idea: a picture's subject is where there are edges, saturated
  /// colour or skin. Each pixel scores 0-255 for each of the three, and a window scores the sum over its
  /// pixels, read from a summed-area table so that every window position costs four lookups.
  enum Attention {
    static func windowScores(_ image: CropAnalysisImage, window: PixelSize) -> [Double] {
      let table = SummedAreaTable(width: image.width, height: image.height, values: saliency(image))
      let columns = image.width - window.width + 1
      let rows = image.height - window.height + 1
      var scores = [Double](repeating: 0, count: columns * rows)
      for y in 0..<rows {
        for x in 0..<columns {
          scores[y * columns + x] = Double(
            table.sum(x: x, y: y, width: window.width, height: window.height))
        }
      }
      return scores
    }

    /// Each pixel's saliency, 0-765: edges + saturation + skin.
    static func saliency(_ image: CropAnalysisImage) -> [Int32] {
      let (w, h) = (image.width, image.height)
      var out = [Int32](repeating: 0, count: w * h)
      image.luma.withUnsafeBufferPointer { luma in
        for y in 0..<h {
          let row = y * w
          let above = max(y - 1, 0) * w
          let below = min(y + 1, h - 1) * w
          for x in 0..<w {
            let i = row + x
            // The 4-neighbour Laplacian of luma (edges replicated): zero on flat areas and on smooth
            // gradients such as skies, large on detail and outlines.
            let laplacian =
              4 * Int32(luma[i]) - Int32(luma[row + max(x - 1, 0)]) - Int32(luma[row + min(x + 1, w - 1)])
              - Int32(luma[above + x]) - Int32(luma[below + x])
            out[i] =
              min(abs(laplacian), 255) + saturation(cb: image.cb[i], cr: image.cr[i])
              + skin(luma: luma[i], cb: image.cb[i], cr: image.cr[i])
          }
        }
      }
      return out
    }

    /// Saturated colour: chroma (the distance from grey in the Cb-Cr plane) above 48, which blue skies,
    /// skin and tinted greys stay under, rising to 255 at 112 (a pure red is 134).
    static func saturation(cb: UInt8, cr: UInt8) -> Int32 {
      let (dcb, dcr) = (Double(cb) - 128, Double(cr) - 128)
      let chroma = (dcb * dcb + dcr * dcr).squareRoot()
      return Int32(min(255, max(0, (chroma - 48) * 4)))
    }

    /// Skin of any tone: Cb and Cr inside the ellipse of Chai and Ngan's skin box (Cb 77-127,
    /// Cr 133-173), fading from 255 at its centre to 0 at its edge, in light neither near black nor
    /// blown out (where chroma says little).
    static func skin(luma: UInt8, cb: UInt8, cr: UInt8) -> Int32 {
      guard (48...240).contains(luma) else { return 0 }
      let (dcb, dcr) = ((Double(cb) - 102) / 25, (Double(cr) - 153) / 20)
      let distance = dcb * dcb + dcr * dcr
      return distance < 1 ? Int32(255 * (1 - distance)) : 0
    }
  }

  /// Sums over any rectangle of a grid in constant time: entry (x, y) holds the sum of every value above
  /// and to the left of it.
  struct SummedAreaTable {
    let stride: Int
    let sums: [Int]

    init(width: Int, height: Int, values: [Int32]) {
      stride = width + 1
      var sums = [Int](repeating: 0, count: (width + 1) * (height + 1))
      for y in 0..<height {
        var rowSum = 0
        for x in 0..<width {
          rowSum += Int(values[y * width + x])
          sums[(y + 1) * stride + x + 1] = sums[y * stride + x + 1] + rowSum
        }
      }
      self.sums = sums
    }

    func sum(x: Int, y: Int, width: Int, height: Int) -> Int {
      sums[(y + height) * stride + x + width] - sums[y * stride + x + width]
        - sums[(y + height) * stride + x] + sums[y * stride + x]
    }
  }
}
