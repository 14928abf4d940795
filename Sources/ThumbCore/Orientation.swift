/// EXIF Orientation (tag 0x0112): how the stored pixels must be transformed to appear upright.
public enum Orientation: Int, Sendable, CaseIterable {
  case up = 1
  case mirrored = 2
  case rotated180 = 3
  case mirroredVertically = 4
  case transposed = 5
  case rotated90Clockwise = 6
  case transverse = 7
  case rotated90CounterClockwise = 8

  /// Whether the upright picture has width and height swapped relative to the stored one.
  public var swapsDimensions: Bool { rawValue >= 5 }

  public func uprightSize(of stored: PixelSize) -> PixelSize {
    swapsDimensions ? stored.transposed : stored
  }

  /// The stored pixel that shows at upright position (x, y), for a stored image of `w` x `h`.
  @inline(__always)
  public func storedCoordinate(x: Int, y: Int, w: Int, h: Int) -> (x: Int, y: Int) {
    switch self {
    case .up: return (x, y)
    case .mirrored: return (w - 1 - x, y)
    case .rotated180: return (w - 1 - x, h - 1 - y)
    case .mirroredVertically: return (x, h - 1 - y)
    case .transposed: return (y, x)
    case .rotated90Clockwise: return (y, h - 1 - x)
    case .transverse: return (w - 1 - y, h - 1 - x)
    case .rotated90CounterClockwise: return (w - 1 - y, x)
    }
  }
}
