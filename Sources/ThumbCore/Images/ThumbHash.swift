import Foundation

/// ThumbHash (Evan Wallace, 2023): a ~25-byte description of a picture's low frequencies that an app
/// decodes into a blurred placeholder while the thumbnail loads. The byte layout is the published
/// format, so any ThumbHash decoder (JavaScript, Swift, Kotlin) reads what this writes.
///
/// The picture is split into luminance (L), yellow-blue (P), red-green (Q) and alpha (A) channels; each
/// is reduced to the first few coefficients of its 2D cosine transform, quantised to 4 bits, behind a
/// 5- or 6-byte header holding the averages, the scales and the aspect.
public enum ThumbHash {
  /// The largest picture the encoder takes on each side: the transform is O(pixels x coefficients),
  /// and more detail than this cannot show in a placeholder.
  public static let maxSide = 100

  /// The hash of an RGBA picture (straight alpha, 8 bits per channel), at most 100x100.
  public static func encode(width w: Int, height h: Int, rgba: [UInt8]) -> [UInt8] {
    precondition(w > 0 && h > 0 && w <= maxSide && h <= maxSide && rgba.count == w * h * 4)
    let n = w * h
    var avgR = 0.0
    var avgG = 0.0
    var avgB = 0.0
    var avgA = 0.0
    for i in 0..<n {
      let alpha = Double(rgba[i * 4 + 3]) / 255
      avgR += alpha / 255 * Double(rgba[i * 4])
      avgG += alpha / 255 * Double(rgba[i * 4 + 1])
      avgB += alpha / 255 * Double(rgba[i * 4 + 2])
      avgA += alpha
    }
    if avgA > 0 {
      avgR /= avgA
      avgG /= avgA
      avgB /= avgA
    }
    let hasAlpha = avgA < Double(n)
    let luminanceLimit = hasAlpha ? 5.0 : 7.0  // fewer luminance terms when alpha needs the room
    let longest = Double(max(w, h))
    let lx = max(1, Int((luminanceLimit * Double(w) / longest).roundedHalfUp))
    let ly = max(1, Int((luminanceLimit * Double(h) / longest).roundedHalfUp))

    // Composite over the average colour, then RGB to LPQ.
    var l = [Double](repeating: 0, count: n)
    var p = l
    var q = l
    var a = l
    for i in 0..<n {
      let alpha = Double(rgba[i * 4 + 3]) / 255
      let r = avgR * (1 - alpha) + alpha / 255 * Double(rgba[i * 4])
      let g = avgG * (1 - alpha) + alpha / 255 * Double(rgba[i * 4 + 1])
      let b = avgB * (1 - alpha) + alpha / 255 * Double(rgba[i * 4 + 2])
      l[i] = (r + g + b) / 3
      p[i] = (r + g) / 2 - b
      q[i] = r - g
      a[i] = alpha
    }

    let lChannel = channel(l, w, h, nx: max(3, lx), ny: max(3, ly))
    let pChannel = channel(p, w, h, nx: 3, ny: 3)
    let qChannel = channel(q, w, h, nx: 3, ny: 3)
    let aChannel = hasAlpha ? channel(a, w, h, nx: 5, ny: 5) : nil

    let isLandscape = w > h
    let header24 =
      Int((63 * lChannel.dc).roundedHalfUp) | Int((31.5 + 31.5 * pChannel.dc).roundedHalfUp) << 6
      | Int((31.5 + 31.5 * qChannel.dc).roundedHalfUp) << 12 | Int((31 * lChannel.scale).roundedHalfUp) << 18
      | (hasAlpha ? 1 : 0) << 23
    let header16 =
      (isLandscape ? ly : lx) | Int((63 * pChannel.scale).roundedHalfUp) << 3
      | Int((63 * qChannel.scale).roundedHalfUp) << 9 | (isLandscape ? 1 : 0) << 15
    var hash: [UInt8] = [
      UInt8(header24 & 255), UInt8(header24 >> 8 & 255), UInt8(header24 >> 16 & 255),
      UInt8(header16 & 255), UInt8(header16 >> 8 & 255),
    ]
    if let aChannel {
      hash.append(
        UInt8(Int((15 * aChannel.dc).roundedHalfUp) | Int((15 * aChannel.scale).roundedHalfUp) << 4))
    }
    // Two 4-bit AC terms per byte, low nibble first.
    let terms = [lChannel.ac, pChannel.ac, qChannel.ac, aChannel?.ac ?? []].joined()
    let start = hash.count
    for (index, f) in terms.enumerated() {
      if index % 2 == 0 { hash.append(0) }
      hash[start + index / 2] |= UInt8(Int((15 * f).roundedHalfUp) << ((index & 1) * 4))
    }
    return hash
  }

  /// The hash as apps store it: standard base64.
  public static func encodeBase64(width: Int, height: Int, rgba: [UInt8]) -> String {
    Data(encode(width: width, height: height, rgba: rgba)).base64EncodedString()
  }

  /// The average colour a hash encodes (RGB 0...1), for tests and tools.
  public static func averageColor(_ hash: [UInt8]) -> (r: Double, g: Double, b: Double)? {
    guard hash.count >= 5 else { return nil }
    let header = Int(hash[0]) | Int(hash[1]) << 8 | Int(hash[2]) << 16
    let l = Double(header & 63) / 63
    let p = Double(header >> 6 & 63) / 31.5 - 1
    let q = Double(header >> 12 & 63) / 31.5 - 1
    let b = l - 2 / 3 * p
    let r = (3 * l - b + q) / 2
    return (min(1, max(0, r)), min(1, max(0, r - q)), min(1, max(0, b)))
  }

  /// The placeholder a hash describes, drawn at `width` x `height` (RGBA, 8 bits, straight alpha): the
  /// inverse of `encode`, for pages that show it (the console). Nil for a hash too short to hold a
  /// header.
  public static func decode(_ hash: [UInt8], width w: Int, height h: Int) -> [UInt8]? {
    guard hash.count >= 5, w > 0, h > 0 else { return nil }
    let header24 = Int(hash[0]) | Int(hash[1]) << 8 | Int(hash[2]) << 16
    let header16 = Int(hash[3]) | Int(hash[4]) << 8
    let lDC = Double(header24 & 63) / 63
    let pDC = Double(header24 >> 6 & 63) / 31.5 - 1
    let qDC = Double(header24 >> 12 & 63) / 31.5 - 1
    let lScale = Double(header24 >> 18 & 31) / 31
    let hasAlpha = header24 >> 23 != 0
    let pScale = Double(header16 >> 3 & 63) / 63
    let qScale = Double(header16 >> 9 & 63) / 63
    let isLandscape = header16 >> 15 != 0
    let limit = hasAlpha ? 5 : 7
    let stored = header16 & 7
    let lx = max(3, isLandscape ? limit : stored)
    let ly = max(3, isLandscape ? stored : limit)
    if hasAlpha && hash.count < 6 { return nil }
    let aDC = hasAlpha ? Double(hash[5] & 15) / 15 : 1
    let aScale = hasAlpha ? Double(hash[5] >> 4) / 15 : 0
    let start = hasAlpha ? 6 : 5
    var nibble = 0
    func terms(_ nx: Int, _ ny: Int, _ scale: Double) -> [(cx: Int, cy: Int, f: Double)] {
      var out: [(Int, Int, Double)] = []
      for cy in 0..<ny {
        var cx = cy == 0 ? 1 : 0
        while cx * ny < nx * (ny - cy) {
          let index = start + nibble >> 1
          let value = index < hash.count ? Int(hash[index]) >> ((nibble & 1) * 4) & 15 : 8
          out.append((cx, cy, (Double(value) / 7.5 - 1) * scale))
          cx += 1
          nibble += 1
        }
      }
      return out
    }
    let l = terms(lx, ly, lScale)
    let p = terms(3, 3, pScale)
    let q = terms(3, 3, qScale)
    let a = hasAlpha ? terms(5, 5, aScale) : []
    // The encoder keeps mean(value * cos * cos): a term with both frequencies non-zero carries a
    // quarter of its amplitude, a term with one of them a half.
    func value(_ terms: [(cx: Int, cy: Int, f: Double)], _ dc: Double, _ x: Int, _ y: Int) -> Double {
      var v = dc
      for term in terms {
        v +=
          term.f * (term.cx > 0 && term.cy > 0 ? 4 : 2)
          * cos(Double.pi / Double(w) * Double(term.cx) * (Double(x) + 0.5))
          * cos(Double.pi / Double(h) * Double(term.cy) * (Double(y) + 0.5))
      }
      return v
    }
    func byte(_ v: Double) -> UInt8 { UInt8(min(255, max(0, (255 * v).rounded()))) }
    var rgba = [UInt8](repeating: 0, count: w * h * 4)
    for y in 0..<h {
      for x in 0..<w {
        let lv = value(l, lDC, x, y)
        let pv = value(p, pDC, x, y)
        let qv = value(q, qDC, x, y)
        let b = lv - 2 / 3 * pv
        let r = (3 * lv - b + qv) / 2
        let i = (x + y * w) * 4
        rgba[i] = byte(r)
        rgba[i + 1] = byte(r - qv)
        rgba[i + 2] = byte(b)
        rgba[i + 3] = hasAlpha ? byte(value(a, aDC, x, y)) : 255
      }
    }
    return rgba
  }

  /// The DC term, the AC terms (mapped to 0...1 by the largest) and that scale, over the triangle of
  /// coefficients cx * ny < nx * (ny - cy) (low frequencies only, as the format defines).
  private static func channel(
    _ values: [Double], _ w: Int, _ h: Int, nx: Int, ny: Int
  ) -> (dc: Double, ac: [Double], scale: Double) {
    var dc = 0.0
    var ac: [Double] = []
    var scale = 0.0
    var fx = [Double](repeating: 0, count: w)
    for cy in 0..<ny {
      var cx = 0
      while cx * ny < nx * (ny - cy) {
        for x in 0..<w { fx[x] = cos(Double.pi / Double(w) * Double(cx) * (Double(x) + 0.5)) }
        var f = 0.0
        for y in 0..<h {
          let fy = cos(Double.pi / Double(h) * Double(cy) * (Double(y) + 0.5))
          for x in 0..<w { f += values[x + y * w] * fx[x] * fy }
        }
        f /= Double(w * h)
        if cx > 0 || cy > 0 {
          ac.append(f)
          scale = max(scale, abs(f))
        } else {
          dc = f
        }
        cx += 1
      }
    }
    if scale > 0 { ac = ac.map { 0.5 + 0.5 / scale * $0 } }
    return (dc, ac, scale)
  }
}

extension Double {
  /// JavaScript's Math.round (halves go up), which the reference encoder uses; Swift's rounded() takes
  /// halves away from zero, and the two differ on negative halves.
  fileprivate var roundedHalfUp: Double { (self + 0.5).rounded(.down) }
}
