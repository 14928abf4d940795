import Foundation
import TestSupport
import Testing

@testable import ThumbCore

@Suite struct ProfileSpecTests {
  @Test func parsesTheSeededDefaultProfile() throws {
    // The same JSON as migrations/0001_init.sql seeds.
    let json = """
      {"variants": [
        {"name": "large",  "width": 1600, "height": 1600, "fit": "inside", "format": "jpeg", "quality": 82},
        {"name": "medium", "width": 800,  "height": 800,  "fit": "inside", "format": "jpeg", "quality": 82},
        {"name": "small",  "width": 320,  "height": 320,  "fit": "inside", "format": "jpeg", "quality": 80},
        {"name": "square", "width": 256,  "height": 256,  "fit": "cover",  "format": "jpeg", "quality": 80}]}
      """
    #expect(try ProfileSpec.parse(name: "default", json: Data(json.utf8)) == Profile.default)
  }

  @Test(arguments: [
    ("{}", "non-empty"),
    (#"{"variants":[{"name":"a","width":0,"height":5}]}"#, "width"),
    (#"{"variants":[{"name":"a","width":5,"height":5,"fit":"stretch"}]}"#, "fit"),
    (#"{"variants":[{"name":"a","width":5,"height":5},{"name":"a","width":5,"height":5}]}"#, "twice"),
    (#"{"variants":[{"name":"A B","width":5,"height":5}]}"#, "name"),
    (#"{"variants":[{"name":"a","width":5,"height":5,"quality":101}]}"#, "quality\" must be an integer"),
    (#"{"variants":[{"name":"a","width":5,"height":5,"progressive":"yes"}]}"#, "true or false"),
    (#"{"variants":[{"name":"a","width":5,"height":5}],"varients":[]}"#, "unknown key \"varients\""),
    (#"{"variants":[{"name":"a","width":5,"height":5,"format":"gif"}]}"#, "jpeg, webp, png, avif, auto"),
    (#"{"variants":[{"name":"a","width":5,"height":5,"format":"webp","speed":4}]}"#, "\"avif\" only"),
    (#"{"variants":[{"name":"a","width":5,"height":5,"format":"avif","speed":10}]}"#, "from 0 to 9"),
    (#"{"variants":[{"name":"a","width":5,"height":5,"subsampling":"4:2:2"}]}"#, "4:2:0, 4:4:4"),
    (#"{"variants":[{"name":"a","width":5,"height":5,"format":"webp","progressive":true}]}"#, "jpeg\" only"),
    (#"{"variants":[{"name":"a","width":5,"height":5,"qualty":80}]}"#, "unknown key \"qualty\""),
    (
      #"{"variants":[{"name":"a","width":5,"height":5,"crop":"attention"}]}"#,
      "variant 'a': \"crop\" applies to \"fit\": \"cover\" only"
    ),
    (
      #"{"variants":[{"name":"a","width":5,"height":5,"fit":"fill","crop":"centre"}]}"#,
      "variant 'a': \"crop\" applies"
    ),
    (
      #"{"variants":[{"name":"a","width":5,"height":5,"fit":"cover","crop":"faces"}]}"#,
      "variant 'a': \"crop\" must be one of centre, attention, entropy"
    ),
    ("not json", "spec is not JSON"),
  ])
  func rejectsBadSpecsWithAReason(json: String, mentions: String) {
    #expect {
      try ProfileSpec.parse(name: "p", json: Data(json.utf8))
    } throws: { error in
      (error as? ProfileSpec.Invalid)?.description.contains(mentions) == true
    }
  }

  @Test func reportsEveryVariantsFirstProblemInOrder() {
    let json = #"""
      {"variants": [
        {"name": "a", "width": 0, "height": 5, "fit": "stretch"},
        {"name": "ok", "width": 5, "height": 5},
        {"width": 5, "height": 5},
        {"name": "ok", "width": 5, "height": 5}]}
      """#
    #expect(
      ProfileSpec.problems(in: Data(json.utf8)) == [
        "variant 'a': \"width\" and \"height\" must be integers from 1 to 8192",
        "variant #3: \"name\" must be 1-64 characters of a-z, 0-9, '_' or '-'",
        "variant 'ok': name is used twice",
      ])
    #expect {
      try ProfileSpec.parse(name: "p", json: Data(json.utf8))
    } throws: { error in
      (error as? ProfileSpec.Invalid)?.description
        == "profile 'p' is invalid: variant 'a': \"width\" and \"height\" must be integers from 1 to 8192; "
        + "variant #3: \"name\" must be 1-64 characters of a-z, 0-9, '_' or '-'; variant 'ok': name is used twice"
    }
    #expect(ProfileSpec.problems(in: Data(profileSpecCases[0].utf8)) == [])
  }

  @Test func aProfileMayChooseAVideosPosterTime() throws {
    let json = #"{"poster": {"at": 2.5}, "variants": [{"name": "a", "width": 5, "height": 5}]}"#
    #expect(try ProfileSpec.parse(name: "p", json: Data(json.utf8)).posterAt == 2.5)
    let none = #"{"poster": null, "variants": [{"name": "a", "width": 5, "height": 5}]}"#
    #expect(try ProfileSpec.parse(name: "p", json: Data(none.utf8)).posterAt == nil)
    let wrong = #"{"poster": {"at": -1}, "variants": [{"name": "a", "width": 5, "height": 5}]}"#
    #expect(
      ProfileSpec.problems(in: Data(wrong.utf8)) == [
        #""poster" must be {"at": SECONDS}, SECONDS a number from 0 to 86400"#
      ])
  }

  @Test func wholeNumbersAreIntegersHoweverWrittenAndNullIsTheDefault() throws {
    let json = #"{"variants": [{"name": "a", "width": 5.0, "height": 5e1, "quality": null, "crop": null}]}"#
    let profile = try ProfileSpec.parse(name: "p", json: Data(json.utf8))
    #expect(profile.variants[0].width == 5 && profile.variants[0].height == 50)
    #expect(profile.variants[0].quality == 82 && profile.variants[0].crop == .centre)
  }

  @Test func readsEveryOption() throws {
    let json = #"""
      {"variants": [
        {"name": "w", "width": 400, "height": 300, "fit": "fill", "format": "webp", "quality": 70},
        {"name": "j", "width": 800, "height": 800, "subsampling": "4:4:4", "progressive": true},
        {"name": "a", "width": 64, "height": 64, "fit": "cover", "format": "auto"},
        {"name": "v", "width": 640, "height": 640, "format": "avif", "quality": 55, "speed": 8},
        {"name": "d", "width": 640, "height": 640, "format": "avif"}]}
      """#
    let profile = try ProfileSpec.parse(name: "p", json: Data(json.utf8))
    #expect(
      profile.variants[0]
        == VariantSpec(name: "w", width: 400, height: 300, fit: .fill, format: .webp, quality: 70))
    #expect(profile.variants[1].subsampling == .s444 && profile.variants[1].progressive)
    #expect(profile.variants[1].format == .jpeg && profile.variants[1].quality == 82)
    #expect(profile.variants[2].format.resolved(sourceHasAlpha: true) == .png)
    #expect(profile.variants[2].format.resolved(sourceHasAlpha: false) == .jpeg)
    #expect(profile.variants[3].format.resolved(sourceHasAlpha: true) == .avif)
    #expect(profile.variants[3].quality == 55 && profile.variants[3].speed == 8)
    #expect(profile.variants[4].speed == VariantSpec.defaultAVIFSpeed)
  }
}

@Suite struct CropSpecTests {
  @Test func coverVariantsTakeACropThatDefaultsToCentre() throws {
    let json = #"""
      {"variants": [
        {"name": "a", "width": 64, "height": 64, "fit": "cover", "crop": "attention"},
        {"name": "e", "width": 64, "height": 32, "fit": "cover", "crop": "entropy"},
        {"name": "c", "width": 64, "height": 64, "fit": "cover", "crop": "centre"},
        {"name": "d", "width": 64, "height": 64, "fit": "cover"}]}
      """#
    let profile = try ProfileSpec.parse(name: "p", json: Data(json.utf8))
    #expect(profile.variants.map(\.crop) == [.attention, .entropy, .centre, .centre])
    // The default profile's square stays a centre crop.
    #expect(Profile.default.variants.allSatisfy { $0.crop == .centre })
  }

  @Test func variantsThatDifferOnlyInTheirCropAreRenderedApart() {
    let centre = VariantSpec(name: "s", width: 256, height: 256, fit: .cover, format: .jpeg, quality: 80)
    var attention = centre
    attention.crop = .attention
    let union = VariantUnion([[centre], [attention], [centre]])
    #expect(union.specs.map(\.crop) == [.centre, .attention])
    #expect(union.members.map { $0.map(\.index) } == [[0], [1], [0]])
  }
}
