import Foundation
import TestSupport
import Testing
import ThumbCore

@testable import ThumbCore

@Suite struct OrientationTests {
  @Test func mapsEveryCornerOfTheStoredImage() {
    // A 3x2 stored image: check where the stored top-left pixel shows up for each orientation.
    let expectations: [Orientation: (Int, Int)] = [
      .up: (0, 0), .mirrored: (2, 0), .rotated180: (2, 1), .mirroredVertically: (0, 1),
      .transposed: (0, 0), .rotated90Clockwise: (1, 0), .transverse: (1, 2),
      .rotated90CounterClockwise: (0, 2),
    ]
    for (orientation, expected) in expectations {
      let upright = orientation.uprightSize(of: PixelSize(width: 3, height: 2))
      var found: (Int, Int)?
      for y in 0..<upright.height {
        for x in 0..<upright.width where orientation.storedCoordinate(x: x, y: y, w: 3, h: 2) == (0, 0) {
          found = (x, y)
        }
      }
      #expect(found.map { $0 == expected } == true, "\(orientation)")
    }
  }
}

@Suite struct StoredRegionTests {
  /// A region of the upright picture, mapped to stored coordinates, must cover the stored pixels that
  /// show there: checked pixel by pixel against storedCoordinate for every orientation.
  @Test(arguments: Orientation.allCases)
  func mapsRegionsLikeStoredCoordinate(orientation: Orientation) {
    let stored = PixelSize(width: 7, height: 4)
    let upright = orientation.uprightSize(of: stored)
    let region = Region(x: 1, y: 2, width: 3, height: 1)  // upright pixels x 1...3, y 2
    let mapped = orientation.storedRegion(region, upright: upright)
    for x in 1...3 {
      let p = orientation.storedCoordinate(x: x, y: 2, w: stored.width, h: stored.height)
      let (cx, cy) = (Double(p.x) + 0.5, Double(p.y) + 0.5)
      #expect(cx > mapped.x && cx < mapped.x + mapped.width, "\(orientation) x \(x)")
      #expect(cy > mapped.y && cy < mapped.y + mapped.height, "\(orientation) x \(x)")
    }
    #expect(mapped.width * mapped.height == 3)
  }
}
