import Testing
import ThumbCore

/// The derivation-loop check that runs before libheif reads a HEIF or AVIF file.
@Suite struct HEIFItemReferencesTests {
  static func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
    let size = UInt32(8 + payload.count)
    return [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)]
      + Array(type.utf8) + payload
  }

  static func id(_ value: UInt32, wide: Bool) -> [UInt8] {
    wide
      ? [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
      : [UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
  }

  /// ftyp, then meta (a full box) holding hdlr and an iref with these references.
  static func file(_ references: [(type: String, from: UInt32, to: [UInt32])], wide: Bool = false) -> [UInt8]
  {
    let children = references.flatMap { reference in
      box(
        reference.type,
        id(reference.from, wide: wide) + [0, UInt8(reference.to.count)]
          + reference.to.flatMap { id($0, wide: wide) })
    }
    let iref = box("iref", [wide ? 1 : 0, 0, 0, 0] + children)
    let meta = box("meta", [0, 0, 0, 0] + box("hdlr", [0, 0, 0, 0] + Array("pict".utf8)) + iref)
    return box("ftyp", Array("heic".utf8) + [0, 0, 0, 0] + Array("mif1".utf8)) + meta
  }

  @Test func aGridOfDistinctTilesIsNoLoop() {
    #expect(HEIFItemReferences.derivationLoop(in: Self.file([("dimg", 1, [2, 3, 4, 5])])) == nil)
  }

  @Test func anItemDerivedFromItselfIsALoop() {
    #expect(HEIFItemReferences.derivationLoop(in: Self.file([("dimg", 1, [2, 1])])) == 1)
  }

  @Test func aLoopThroughOtherItemsIsFound() {
    let refs: [(type: String, from: UInt32, to: [UInt32])] = [
      ("dimg", 7, [8]), ("dimg", 8, [9]), ("dimg", 9, [7]),
    ]
    #expect(HEIFItemReferences.derivationLoop(in: Self.file(refs)) == 7)
  }

  @Test func thirtyTwoBitItemIDsAreRead() {
    #expect(
      HEIFItemReferences.derivationLoop(in: Self.file([("dimg", 70_000, [70_000])], wide: true)) == 70_000)
    #expect(HEIFItemReferences.derivationLoop(in: Self.file([("dimg", 70_000, [70_001])], wide: true)) == nil)
  }

  /// Only derivations count: alpha (auxl) and premultiplication (prem) legitimately point both ways,
  /// and a thumbnail naming itself does not make libheif recurse.
  @Test func otherReferenceTypesAreNotDerivations() {
    #expect(HEIFItemReferences.derivationLoop(in: Self.file([("auxl", 2, [1]), ("prem", 1, [2])])) == nil)
    #expect(HEIFItemReferences.derivationLoop(in: Self.file([("thmb", 3, [3])])) == nil)
  }

  /// A reference that claims more targets than its box holds is not judged here: libheif refuses the
  /// file with its own error.
  @Test func aTruncatedReferenceIsLeftToLibheif() {
    var bytes = Self.file([("dimg", 1, [1])])
    let count = bytes.count - 4  // the reference count sits just before the one 16-bit target
    bytes[count + 1] = 9
    #expect(HEIFItemReferences.derivationLoop(in: bytes) == nil)
  }

  /// A hostile chain cannot exhaust the checker's own stack.
  @Test func aLongChainIsWalkedWithoutRecursion() {
    let chain = (1..<20_000).map { (type: "dimg", from: UInt32($0), to: [UInt32($0 + 1)]) }
    #expect(HEIFItemReferences.derivationLoop(in: Self.file(chain, wide: true)) == nil)
    let loop = chain + [(type: "dimg", from: 20_000, to: [1])]
    #expect(HEIFItemReferences.derivationLoop(in: Self.file(loop, wide: true)) == 1)
  }

  @Test func filesWithoutReferencesOrBoxesAreFine() {
    #expect(HEIFItemReferences.derivationLoop(in: Self.file([])) == nil)
    #expect(HEIFItemReferences.derivationLoop(in: []) == nil)
    #expect(HEIFItemReferences.derivationLoop(in: Array(repeating: 0xFF, count: 64)) == nil)
  }
}
