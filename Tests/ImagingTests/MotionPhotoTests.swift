import Foundation
import TestSupport
import Testing
import ThumbCore

@testable import Imaging

/// Stills with motion (Tests/Support/motion-samples.py): each layout's clip found where it lies and
/// described in `media.motion`, both halves of a Live Photo giving the same identifier, and every
/// damaged or lying file rendered as a plain still, with a warning where it claimed a clip.
@Suite(.enabled(if: MotionSamples.isAvailable, Comment(rawValue: MotionSamples.skipReason)))
struct MotionPhotoTests {
  @Test(arguments: MotionSamples.cases)
  func eachFileGetsItsMotionOrRendersAsAStill(_ sample: MotionSamples.Case) throws {
    let bytes = try MotionSamples.bytes(sample.name)
    let (info, variants) = try Thumbnailer().render(bytes, variants: Profile.default.variants)
    #expect(variants.count == 4, "\(sample.name)")
    let motion = info.media?.motion
    switch sample.expect {
    case "motion":
      #expect(info.format != .video)
      #expect(
        motion?.offset == sample.offset && motion?.length == sample.length,
        "\(sample.name): \(info.media?.json ?? "no media")")
      #expect(motion?.codec == sample.codec)
      let duration = try #require(motion?.durationMs)
      #expect(abs(duration - (sample.durationMs ?? 0)) <= 40, "\(sample.name): \(duration) ms")
      #expect(motion?.stillMs == sample.stillUs.map { $0 / 1000 })
      #expect(info.warnings.isEmpty, "\(sample.name): \(info.warnings)")
      // The clip found is the very clip that was embedded.
      let clip = try MotionSamples.bytes(sample.codec == "hevc" ? "clip-hevc.mp4" : "clip-h264.mp4")
      #expect(Array(bytes[(sample.offset ?? 0)..<((sample.offset ?? 0) + (sample.length ?? 0))]) == clip)
    case "video":
      #expect(info.format == .video && info.media?.kind == "video")
    default:
      #expect(motion == nil, "\(sample.name) should be a plain still: \(info.media?.json ?? "")")
      // A file that claims a clip it does not hold says so; a plain one says nothing, nor does a
      // trailer cut before its directory (nothing then says a clip is there).
      let claims =
        sample.layout != "none" && sample.layout != "live-photo"
        && sample.name != "samsung-trailer-no-seft.jpg"
      #expect(
        info.warnings.map(\.code) == (claims ? [RenderWarning.motionUnreadable] : []),
        "\(sample.name): \(info.warnings)")
    }
    #expect(info.media?.livePhotoID == sample.livePhotoID, "\(sample.name)")
    if info.media == nil { #expect(sample.expect == "still" && sample.livePhotoID == nil) }
  }

  /// Every layout's file cut at many lengths and with its last bytes (where trailers and boxes say
  /// where the clip is) overwritten: what is found always lies inside the file and begins a clip, or
  /// nothing is.
  @Test(arguments: [
    "google-container.jpg", "google-microvideo.jpg", "samsung-trailer.jpg", "samsung-mpvd.heic",
  ])
  func cutAndScribbledFilesNeverPointOutside(_ name: String) throws {
    let whole = try MotionSamples.bytes(name)
    let format = try #require(ImageFormat.sniff(whole))
    var variants: [[UInt8]] = stride(from: 1, to: whole.count, by: max(1, whole.count / 97)).map {
      Array(whole.prefix($0))
    }
    var generator = SystemRandomNumberGenerator()
    for _ in 0..<200 {
      var scribbled = whole
      for _ in 0..<4 {
        let at = whole.count - 1 - Int.random(in: 0..<min(whole.count, 64), using: &generator)
        scribbled[at] = UInt8.random(in: 0...255, using: &generator)
      }
      variants.append(scribbled)
    }
    for bytes in variants {
      if case .clip(let clip) = EmbeddedClip.find(in: bytes, format: format) {
        #expect(clip.offset > 0 && clip.range.upperBound <= bytes.count)
        #expect(bytes[(clip.offset + 4)..<(clip.offset + 8)].elementsEqual("ftyp".utf8))
      }
    }
  }

  /// The media JSON of a Motion Photo: kind image, the clip's place and facts, nothing of a video's.
  @Test func aMotionPhotosMediaIsAnImageWithItsClip() throws {
    let bytes = try MotionSamples.bytes("google-container.jpg")
    let opened = try Thumbnailer().open(.whole(bytes))
    let media = try #require(Thumbnailer().probe(opened, variants: Profile.default.variants)?.media)
    let object = try #require(
      JSONSerialization.jsonObject(with: Data(media.json.utf8)) as? [String: Any])
    #expect(Set(object.keys) == ["kind", "motion"])
    #expect(object["kind"] as? String == "image")
    let motion = try #require(object["motion"] as? [String: Any])
    #expect(Set(motion.keys) == ["offset", "length", "duration_ms", "codec", "still_ms"])
  }
}

/// The Live Photo identifiers of real iPhone HEICs (../shared/corpus), read from their maker notes.
@Suite(.enabled(if: SharedCorpus.isAvailable, Comment(rawValue: SharedCorpus.skipReason)))
struct LivePhotoCorpusTests {
  @Test(arguments: [
    ("heic/IMG_5195.HEIC", "570F1469-09C7-4E50-9875-05F21D5BD166"),
    ("phone/drewnoakes__IMG_2927.HEIC", "1745E022-9712-43C7-B024-F308EC6413CB"),
  ])
  func anIPhoneHEICNamesItsLivePhoto(_ path: String, _ identifier: String) throws {
    let bytes = try SharedCorpus.bytes(path)
    #expect(LivePhotoIdentifier.ofStill(bytes, format: .heif) == identifier)
    let (info, _) = try Thumbnailer().render(bytes, variants: Profile.default.variants)
    #expect(info.media?.livePhotoID == identifier && info.media?.kind == "image" && info.media?.motion == nil)
  }

  /// A Samsung HEIC and a camera JPEG carry no Live Photo: their media stays null.
  @Test(arguments: ["phone/drewnoakes__Issue_487.heic", "exif/DSCN0010.jpg"])
  func otherPhotosHaveNoMedia(_ path: String) throws {
    let bytes = try SharedCorpus.bytes(path)
    let (info, _) = try Thumbnailer().render(bytes, variants: Profile.default.variants)
    #expect(info.media == nil)
  }
}
