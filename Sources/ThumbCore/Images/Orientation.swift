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

extension Orientation {
  /// The rectangle of the stored image that shows as `region` of the upright image, whose size is
  /// `upright`. Continuous coordinates: the pixel-centre form of storedCoordinate(x:y:w:h:).
  public func storedRegion(_ region: Region, upright: PixelSize) -> Region {
    let stored = uprightSize(of: upright)  // the inverse of a swap is a swap
    let (w, h) = (Double(stored.width), Double(stored.height))
    func map(_ x: Double, _ y: Double) -> (Double, Double) {
      switch self {
      case .up: return (x, y)
      case .mirrored: return (w - x, y)
      case .rotated180: return (w - x, h - y)
      case .mirroredVertically: return (x, h - y)
      case .transposed: return (y, x)
      case .rotated90Clockwise: return (y, h - x)
      case .transverse: return (w - y, h - x)
      case .rotated90CounterClockwise: return (w - y, x)
      }
    }
    let a = map(region.x, region.y)
    let b = map(region.x + region.width, region.y + region.height)
    return Region(x: min(a.0, b.0), y: min(a.1, b.1), width: abs(b.0 - a.0), height: abs(b.1 - a.1))
  }
}
