import TestSupport
import Testing

@testable import ThumbCore

/// The container reader behind thumbd's own HEVC route (HEVCTiles): what it finds in real phone files,
/// the orientation the turns make, and that damaged containers are declined, not crashed on.
@Suite struct HEVCItemTests {
  @Test(.enabled(if: SharedCorpus.isAvailable, Comment(rawValue: SharedCorpus.skipReason)))
  func anIPhoneGridIsItsTilesInRowsAndColumns() throws {
    let item = try #require(HEVCItem.readPrimary(try SharedCorpus.bytes("phone/drewnoakes__IMG_2927.HEIC")))
    #expect(item.size == PixelSize(width: 3024, height: 4032))
    #expect(item.tileSize == PixelSize(width: 512, height: 512))
    #expect(item.columns == 6 && item.rows == 8 && item.tiles.count == 48)
    #expect(item.chromaFormat == 1 && item.lumaBits == 8 && item.chromaBits == 8 && item.lengthSize == 4)
    #expect(item.crop == nil && item.orientation == .up, "\(item.transforms)")
    // VPS, SPS and PPS at least, each behind a four-byte length.
    #expect(item.parameterSets.count > 40 && item.parameterSets[0...1] == [0, 0])
  }

  @Test(.enabled(if: SharedCorpus.isAvailable, Comment(rawValue: SharedCorpus.skipReason)))
  func aSamsungPictureTurnedByIrotHasThatOrientation() throws {
    let item = try #require(HEVCItem.readPrimary(try SharedCorpus.bytes("phone/drewnoakes__Issue_487.heic")))
    #expect(item.transforms == [.rotation(3)])  // irot 3: three quarter turns anticlockwise
    #expect(item.orientation == .rotated90Clockwise)
    #expect(item.size == PixelSize(width: 4032, height: 3024))
    #expect(item.displayedSize == PixelSize(width: 3024, height: 4032))
  }

  @Test func turnsAndMirrorsComposeIntoTheEXIFOrientations() {
    func orientation(_ transforms: [HEVCItem.Transform]) -> Orientation {
      HEVCItem(
        tiles: [], parameterSets: [], lengthSize: 4, chromaFormat: 1, lumaBits: 8, chromaBits: 8, columns: 1,
        rows: 1, tileSize: PixelSize(width: 1, height: 1), size: PixelSize(width: 1, height: 1), crop: nil,
        transforms: transforms, nclx: nil,
        sequence: HEVCSequenceParameters(
          chromaFormat: 1, separateColourPlanes: false, codedWidth: 8, codedHeight: 8,
          window: (0, 0, 0, 0), lumaBits: 8, chromaBits: 8, signal: VideoSignal())
      ).orientation
    }
    #expect(orientation([]) == .up)
    #expect(orientation([.rotation(1)]) == .rotated90CounterClockwise)
    #expect(orientation([.rotation(2)]) == .rotated180)
    #expect(orientation([.rotation(3)]) == .rotated90Clockwise)
    #expect(orientation([.mirror(0)]) == .mirrored)
    #expect(orientation([.mirror(1)]) == .mirroredVertically)
    #expect(orientation([.rotation(1), .mirror(0)]) == .transverse)
    #expect(orientation([.rotation(1), .mirror(1)]) == .transposed)
    #expect(orientation([.rotation(2), .rotation(2)]) == .up)
  }

  /// Every single-byte change of the container's boxes (the first 4 KB: ftyp and meta) either still
  /// reads as an item whose tiles lie inside the file or reads as nothing; none traps.
  @Test(.enabled(if: SharedCorpus.isAvailable, Comment(rawValue: SharedCorpus.skipReason)))
  func damagedContainersAreDeclinedNotCrashedOn() throws {
    let original = try SharedCorpus.bytes("heic/IMG_5195.HEIC")
    var declined = 0
    for at in stride(from: 0, to: min(4096, original.count), by: 1) {
      for value: UInt8 in [0x00, 0xFF, original[at] ^ 0x01] where value != original[at] {
        var bytes = original
        bytes[at] = value
        guard let item = HEVCItem.readPrimary(bytes) else {
          declined += 1
          continue
        }
        #expect(item.tiles.allSatisfy { $0.allSatisfy { $0.upperBound <= bytes.count && !$0.isEmpty } })
        #expect(item.tiles.count == item.rows * item.columns)
      }
    }
    #expect(declined > 0)
    // Cut short anywhere in the container: nothing, or tiles within what is left.
    for length in stride(from: 0, to: min(4096, original.count), by: 7) {
      let item = HEVCItem.readPrimary(Array(original.prefix(length)))
      #expect(item.map { $0.tiles.allSatisfy { $0.allSatisfy { $0.upperBound <= length } } } ?? true)
    }
  }

  @Test func theCleanApertureIsCentredAndRoundedAsLibheifDoes() {
    // 100x80 cut to 50x40, centred: left (99 - 49) / 2 = 25, top (79 - 39) / 2 = 20.
    let centred = HEIFMeta.cleanAperture([50, 1, 40, 1, 0, 1, 0, 1], of: PixelSize(width: 100, height: 80))
    #expect(centred?.x == 25 && centred?.y == 20 && centred?.width == 50 && centred?.height == 40)
    // Moved 10 left and 5 down.
    let moved = HEIFMeta.cleanAperture([50, 1, 40, 1, -10, 1, 5, 1], of: PixelSize(width: 100, height: 80))
    #expect(moved?.x == 15 && moved?.y == 25)
    // Out of the picture, or a zero denominator: no crop this route can make.
    #expect(
      HEIFMeta.cleanAperture([50, 1, 40, 1, 60, 1, 0, 1], of: PixelSize(width: 100, height: 80)) == nil)
    #expect(HEIFMeta.cleanAperture([50, 0, 40, 1, 0, 1, 0, 1], of: PixelSize(width: 100, height: 80)) == nil)
  }
}
