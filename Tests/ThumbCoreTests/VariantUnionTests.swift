import Foundation
import Testing
import ThumbCore

@Suite struct VariantUnionTests {
  @Test func rendersEachDistinctVariantOnceAndMapsItBack() {
    let a = Profile.default.variants
    var b = Profile.default.variants
    b[0].name = "big"  // the same output under another name
    b[1].quality = 60  // a different output
    let extra = VariantSpec(name: "thumb", width: 100, height: 100, fit: .cover, format: .webp, quality: 70)
    let union = VariantUnion([a, b + [extra]])
    #expect(union.specs.count == 6)  // a's four, b's medium at q60, the webp
    #expect(Set(union.specs.map(\.name)).count == 6)
    #expect(union.members[0].map(\.name) == ["large", "medium", "small", "square"])
    #expect(union.members[1].map(\.name) == ["big", "medium", "small", "square", "thumb"])
    #expect(union.members[1][0].index == union.members[0][0].index)
    #expect(union.members[1][1].index != union.members[0][1].index)
    #expect(union.specs[union.members[1][1].index].quality == 60)
    #expect(union.specs[union.members[1][4].index].format == .webp)
  }
}
