/// JFIF's YCbCr (full-range BT.601), the colour model of almost every JPEG.
enum YCbCr {
  /// One pixel to RGB, in 16-bit fixed point with rounding.
  @inline(__always)
  static func rgb(y: UInt8, cb: UInt8, cr: UInt8) -> (UInt8, UInt8, UInt8) {
    let yy = Int32(y) << 16 + 32768
    let b = Int32(cb) - 128
    let r = Int32(cr) - 128
    // 1.402, 0.344136, 0.714136, 1.772 in 16.16.
    return (
      clampByte((yy + 91881 * r) >> 16), clampByte((yy - 22554 * b - 46802 * r) >> 16),
      clampByte((yy + 116130 * b) >> 16)
    )
  }

  @inline(__always)
  static func clampByte(_ v: Int32) -> UInt8 { UInt8(truncatingIfNeeded: v < 0 ? 0 : v > 255 ? 255 : v) }
}
