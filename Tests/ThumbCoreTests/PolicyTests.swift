import Foundation
import Testing

@testable import ThumbCore

@Suite struct RetryPolicyTests {
  let policy = RetryPolicy(baseSeconds: 10, capSeconds: 300, jitter: 0.25)

  @Test func growsExponentiallyUpToTheCap() {
    #expect(policy.delay(afterAttempt: 1, unit: 0) == 10)
    #expect(policy.delay(afterAttempt: 3, unit: 0) == 40)
    #expect(policy.delay(afterAttempt: 10, unit: 0) == 300)
    #expect(policy.delay(afterAttempt: 1000, unit: 0) == 300)
  }

  @Test func jitterOnlyShortens() {
    #expect(policy.delay(afterAttempt: 2, unit: 0.999) > 15)
    #expect(policy.delay(afterAttempt: 2, unit: 0.999) <= 20)
  }

  @Test func permanentErrorsAndLastAttemptsFail() {
    #expect(policy.decide(code: .notFound, attempt: 1, maxAttempts: 5, unit: 0) == .fail)
    #expect(policy.decide(code: .corruptImage, attempt: 1, maxAttempts: 5, unit: 0) == .fail)
    #expect(policy.decide(code: .fetchFailed, attempt: 5, maxAttempts: 5, unit: 0) == .fail)
    #expect(
      policy.decide(code: .fetchFailed, attempt: 2, maxAttempts: 5, unit: 0) == .retry(afterSeconds: 20))
    #expect(policy.decide(code: .timeout, attempt: 1, maxAttempts: 5, unit: 0) == .retry(afterSeconds: 10))
  }

  @Test func contractVocabularyIsStable() {
    let contract = [
      "not_found", "http_error", "fetch_failed", "timeout", "too_large", "blocked_source",
      "unsupported_format", "corrupt_image", "over_memory_budget", "storage_failed",
    ]
    for code in contract { #expect(ErrorCode(rawValue: code) != nil, "\(code)") }
  }
}

@Suite struct ByteSizeTests {
  @Test func parsesOperatorSizes() {
    #expect(ByteSize.parse("256MiB") == 268_435_456)
    #expect(ByteSize.parse("50MB") == 50_000_000)
    #expect(ByteSize.parse("1g") == 1_073_741_824)
    #expect(ByteSize.parse("4096") == 4096)
    #expect(ByteSize.parse(" 1.5 KiB ") == 1536)
    #expect(ByteSize.parse("lots") == nil)
    #expect(ByteSize.parse("12parsecs") == nil)
    #expect(ByteSize.format(268_435_456) == "256 MiB")
  }
}

@Suite struct AddressGuardTests {
  let guardDefault = AddressGuard()

  @Test(arguments: [
    "127.0.0.1", "10.0.0.1", "172.16.5.4", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0",
    "::1", "::", "fe80::1", "fd00::5", "::ffff:127.0.0.1", "::ffff:169.254.169.254", "224.0.0.1",
  ])
  func blocksPrivateAndReservedAddresses(address: String) throws {
    let ip = try #require(IPAddress(address))
    #expect(!guardDefault.permits(address: ip, host: "example.com"))
  }

  @Test(arguments: ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "172.32.0.1"])
  func allowsPublicAddresses(address: String) throws {
    #expect(guardDefault.permits(address: try #require(IPAddress(address)), host: nil))
  }

  @Test func allowListExemptsHostsAndNetworks() throws {
    let allowing = try AddressGuard(allowList: "127.0.0.1, 10.1.0.0/16 origin.internal")
    #expect(allowing.permits(address: IPAddress("127.0.0.1")!, host: "localhost"))
    #expect(allowing.permits(address: IPAddress("10.1.2.3")!, host: nil))
    #expect(!allowing.permits(address: IPAddress("10.2.0.1")!, host: nil))
    #expect(allowing.permits(address: IPAddress("192.168.0.9")!, host: "origin.internal"))
    #expect(throws: AddressGuard.ParseError.self) { try AddressGuard(allowList: "10.0.0.0/99") }
  }

  @Test func parsesAddressForms() {
    #expect(IPAddress("1.2.3") == nil)
    #expect(IPAddress("256.1.1.1") == nil)
    #expect(IPAddress("1::2::3") == nil)
    #expect(IPAddress("2001:db8::1")?.bytes.count == 16)
    #expect(IPAddress("::ffff:1.2.3.4")?.unmappedIPv4 == IPAddress("1.2.3.4"))
  }
}

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
    (#"{"variants":[{"name":"a","width":5,"height":5,"quality":101}]}"#, "quality"),
    (#"{"variants":[{"name":"a","width":5,"height":5,"format":"gif"}]}"#, "jpeg, webp, png, auto"),
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
    ("not json", "JSON"),
  ])
  func rejectsBadSpecsWithAReason(json: String, mentions: String) {
    #expect {
      try ProfileSpec.parse(name: "p", json: Data(json.utf8))
    } throws: { error in
      (error as? ProfileSpec.Invalid)?.description.contains(mentions) == true
    }
  }

  @Test func readsEveryOption() throws {
    let json = #"""
      {"variants": [
        {"name": "w", "width": 400, "height": 300, "fit": "fill", "format": "webp", "quality": 70},
        {"name": "j", "width": 800, "height": 800, "subsampling": "4:4:4", "progressive": true},
        {"name": "a", "width": 64, "height": 64, "fit": "cover", "format": "auto"}]}
      """#
    let profile = try ProfileSpec.parse(name: "p", json: Data(json.utf8))
    #expect(
      profile.variants[0]
        == VariantSpec(name: "w", width: 400, height: 300, fit: .fill, format: .webp, quality: 70))
    #expect(profile.variants[1].subsampling == .s444 && profile.variants[1].progressive)
    #expect(profile.variants[1].format == .jpeg && profile.variants[1].quality == 82)
    #expect(profile.variants[2].format.resolved(sourceHasAlpha: true) == .png)
    #expect(profile.variants[2].format.resolved(sourceHasAlpha: false) == .jpeg)
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

@Suite struct ImageFormatTests {
  @Test func sniffsByMagicBytes() {
    #expect(ImageFormat.sniff([0xFF, 0xD8, 0xFF, 0xE0]) == .jpeg)
    #expect(ImageFormat.sniff([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) == .png)
    #expect(ImageFormat.sniff(Array("RIFF\0\0\0\0WEBPVP8 ".utf8)) == .webp)
    #expect(ImageFormat.sniff([0, 0, 0, 0x18] + Array("ftypheic\0\0\0\0mif1heic".utf8)) == .heif)
    #expect(ImageFormat.sniff([0, 0, 0, 0x18] + Array("ftypavif\0\0\0\0avifmif1".utf8)) == .avif)
    // A vendor major brand with HEIF among the compatible ones (libheif's fuzz corpus has such files).
    #expect(ImageFormat.sniff([0, 0, 0, 0x18] + Array("ftyp    \0\0\0\0    mif1".utf8)) == .heif)
    #expect(ImageFormat.sniff([0, 0, 0, 0x18] + Array("ftypisom\0\0\0\0isommp41".utf8)) == nil)  // MP4
    #expect(ImageFormat.sniff([0, 0, 0, 0x18] + Array("ftypheic".utf8)) == nil)  // the box is cut short
    #expect(ImageFormat.sniff(Array("<html>".utf8)) == nil)
    #expect(ImageFormat.sniff([]) == nil)
  }
}

struct LeaseBookTests {
  @Test func heartbeatAnswersMarkMissingLeasesLost() {
    var book = LeaseBook<String>()
    book.hold(id: 2, token: "b", payload: "two")
    book.hold(id: 1, token: "a", payload: "one")
    book.hold(id: 3, token: "c", payload: "three")
    #expect(book.leasesToExtend().map(\.id) == [1, 2, 3])
    let lost = book.heartbeatAnswered(sent: book.leasesToExtend(), extended: [1, 3])
    #expect(lost.map(\.payload) == ["two"])
    #expect(book.status(of: 2, token: "b") == .lost && book.status(of: 1, token: "a") == .held)
    // A lost lease is neither extended again nor reported lost twice.
    #expect(book.leasesToExtend().map(\.id) == [1, 3])
    #expect(book.heartbeatAnswered(sent: [(2, "b")], extended: []).isEmpty)
    #expect(book.heldCount == 2 && book.count == 3)
  }

  @Test func handBackTakesOnlyHeldLeasesAndReleaseReportsTheEnd() {
    var book = LeaseBook<Int>()
    for id in [5, 4, 6] { book.hold(id: Int64(id), token: "t\(id)", payload: id) }
    _ = book.heartbeatAnswered(sent: [(4, "t4")], extended: [])
    let returned = book.handBackAll()
    #expect(returned.map(\.id) == [5, 6] && returned.map(\.token) == ["t5", "t6"])
    #expect(book.handBackAll().isEmpty)
    #expect(book.release(id: 4, token: "t4") == .lost)
    #expect(book.release(id: 5, token: "t5") == .handedBack)
    #expect(book.release(id: 5, token: "t5") == nil)
    #expect(book.count == 1)
  }

  @Test func aNewLeaseOnTheSameJobSupersedesTheOldOne() {
    var book = LeaseBook<String>()
    #expect(book.hold(id: 7, token: "old", payload: "first run") == nil)
    // The old lease expired unnoticed and the job came back to this worker.
    #expect(book.hold(id: 7, token: "new", payload: "second run") == "first run")
    #expect(book.status(of: 7, token: "old") == nil && book.status(of: 7, token: "new") == .held)
    // The first run's task ends: it must not remove the second run's lease.
    #expect(book.release(id: 7, token: "old") == nil)
    #expect(book.leasesToExtend().map(\.token) == ["new"])
    // A heartbeat sent with the old token and refused does not touch the new lease.
    #expect(book.heartbeatAnswered(sent: [(7, "old")], extended: []).isEmpty)
    #expect(book.release(id: 7, token: "new") == .held)
  }
}

struct TimeSpanTests {
  @Test func parsesOperatorDurations() {
    #expect(TimeSpan.parseSeconds("90") == 90)
    #expect(TimeSpan.parseSeconds("30m") == 1800)
    #expect(TimeSpan.parseSeconds(" 12h ") == 43200)
    #expect(TimeSpan.parseSeconds("7d") == 604_800)
    #expect(TimeSpan.parseSeconds("1.5s") == 1.5)
    #expect(TimeSpan.parseSeconds("0") == 0)
    for bad in ["", "d", "-1d", "7x", "seven days", "inf"] {
      #expect(TimeSpan.parseSeconds(bad) == nil, "\(bad)")
    }
  }
}
