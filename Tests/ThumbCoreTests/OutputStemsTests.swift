import Testing
import ThumbCore

struct OutputStemsTests {
  @Test func aLaterInputWithATakenStemKeepsItsExtension() {
    #expect(OutputStems.assign(["a.jpg", "a.heic"]) == ["a", "a.heic"])
    #expect(OutputStems.assign(["dir/a.heic", "other/a.jpg", "b.png"]) == ["a", "a.jpg", "b"])
  }

  @Test func theSameNameTwiceGainsANumber() {
    #expect(OutputStems.assign(["x/a.jpg", "y/a.jpg", "z/a.jpg"]) == ["a", "a.jpg", "a.jpg-2"])
  }

  @Test func namesWithoutOrWithOnlyALeadingDotAreTheirOwnStem() {
    #expect(OutputStems.assign(["photo", ".hidden", "photo.jpg"]) == ["photo", ".hidden", "photo.jpg"])
    #expect(OutputStems.assign(["archive.tar.gz"]) == ["archive.tar"])
  }
}
