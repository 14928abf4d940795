import CLCMS2
import Testing
import ThumbCore

@testable import Imaging

/// CMYK JPEGs: through their own CMYK profile, or, without one, the press profile from Debian's
/// libgs-common (Ghostscript's SWOP `default_cmyk.icc`, installed by scripts/install-deps.sh), relative
/// colorimetric with black-point compensation as for embedded profiles; never the naive inversion.
@Suite(
  .enabled(
    if: DefaultCMYKProfile.isInstalled,
    "\(DefaultCMYKProfile.path) is missing: run scripts/install-deps.sh (libgs-common)"))
struct CMYKTests {
  let thumbnailer = Thumbnailer()

  /// Inks in percent (C, M, Y, K), and what the press profile makes of them in sRGB (lcms2, relative
  /// colorimetric with black-point compensation), written down so that a test transform that went
  /// wrong the same way as thumbd's could not pass. The four process inks match the values Adobe's
  /// SWOP conversion is known for (#00AEEF, #EC008C, #FFF200, #231F20).
  static let patches: [(name: String, ink: [Double], press: [Double])] = [
    ("cyan", [100, 0, 0, 0], [0, 174, 239]),
    ("magenta", [0, 100, 0, 0], [236, 0, 140]),
    ("yellow", [0, 0, 100, 0], [255, 242, 0]),
    ("black", [0, 0, 0, 100], [35, 31, 32]),
    ("skin", [5, 25, 35, 0], [239, 195, 163]),
  ]

  /// The bytes libjpeg hands over for `ink`: Adobe's inverted CMYK, 255 meaning no ink.
  static func inverted(_ ink: [Double]) -> (UInt8, UInt8, UInt8, UInt8) {
    let v = ink.map { UInt8((255 - $0 * 2.55).rounded()) }
    return (v[0], v[1], v[2], v[3])
  }

  /// The mean colour of thumbd's JPEG thumbnail of a flat CMYK JPEG.
  func rendered(_ jpeg: [UInt8]) throws -> [Double] {
    meanColor(
      try JPEG.decode(try thumbnailer.render(jpeg, variants: [variant("a", 32, 32, quality: 95)]).1[0].data))
  }

  /// `cmyk` (inverted, as stored) through `profile` to sRGB by lcms2 directly, as OutputStage does.
  static func lcms2(_ profile: UnsafeRawBufferPointer, _ cmyk: (UInt8, UInt8, UInt8, UInt8)) -> [Double] {
    let input = cmsOpenProfileFromMem(profile.baseAddress, cmsUInt32Number(profile.count))!
    let srgb = cmsCreate_sRGBProfile()!
    defer {
      cmsCloseProfile(input)
      cmsCloseProfile(srgb)
    }
    let transform = cmsCreateTransform(
      input, thumbd_lcms_cmyk8_inverted(), srgb, thumbd_lcms_rgb8(),
      cmsUInt32Number(INTENT_RELATIVE_COLORIMETRIC), cmsUInt32Number(cmsFLAGS_BLACKPOINTCOMPENSATION))!
    defer { cmsDeleteTransform(transform) }
    let pixel = [cmyk.0, cmyk.1, cmyk.2, cmyk.3]
    var rgb: [UInt8] = [0, 0, 0]
    cmsDoTransform(transform, pixel, &rgb, 1)
    return rgb.map(Double.init)
  }

  @Test func theInstalledProfileIsACMYKProfileLcms2Opens() throws {
    let profile = try #require(DefaultCMYKProfile.bytes)
    #expect(profile.count > 100_000, "a measured press profile, not a stub: \(profile.count) bytes")
    let opened = try #require(cmsOpenProfileFromMem(profile, cmsUInt32Number(profile.count)))
    defer { cmsCloseProfile(opened) }
    #expect(cmsGetColorSpace(opened) == cmsSigCmykData && cmsGetDeviceClass(opened) == cmsSigOutputClass)
    #expect(DefaultCMYKProfile.toSRGB != nil)
  }

  @Test(arguments: patches.indices)
  func withoutAProfileThePressProfileServes(_ index: Int) throws {
    let (name, ink, press) = Self.patches[index]
    let cmyk = Self.inverted(ink)
    let expected = try #require(DefaultCMYKProfile.bytes).withUnsafeBytes { Self.lcms2($0, cmyk) }
    #expect(near(expected, press, 3), "\(name): lcms2 gives \(expected)")
    let out = try rendered(TestImages.cmykJPEG(width: 64, height: 64, cmyk: cmyk))
    #expect(near(out, expected, 4), "\(name): thumbd gives \(out), the profile \(expected)")
  }

  /// Naive inversion makes full cyan (0, 255, 255), a colour no press prints; the profile's cyan is
  /// darker and bluer (0, 174, 239).
  @Test func cyanIsNotTheNaiveInversion() throws {
    let cyan = Self.inverted([100, 0, 0, 0])
    let out = try rendered(TestImages.cmykJPEG(width: 64, height: 64, cmyk: cyan))
    let naive = PixelBuffer(width: 1, height: 1, channels: 4, pixels: [cyan.0, cyan.1, cyan.2, cyan.3])
      .rgbFromInvertedCMYK().pixels.map(Double.init)
    #expect(naive == [0, 255, 255])
    #expect(out[1] < 185 && out[2] < 245 && abs(out[1] - naive[1]) > 70, "\(out)")
  }

  /// A file's own CMYK profile still wins: one whose every ink combination is the same green (made
  /// here with lcms2) turns the cyan patch green, unlike the press profile or the inversion.
  @Test func anEmbeddedCMYKProfileIsStillUsed() throws {
    let profile = Self.constantGreenCMYKProfile()
    let cyan = Self.inverted([100, 0, 0, 0])
    let expected = profile.withUnsafeBytes { Self.lcms2($0, cyan) }
    #expect(expected[1] > expected[0] + 60 && expected[1] > expected[2] + 60, "\(expected)")
    let tagged = TestImages.inserting(
      [TestImages.iccSegment(profile)], into: TestImages.cmykJPEG(width: 64, height: 64, cmyk: cyan))
    let out = try rendered(tagged)
    #expect(near(out, expected, 4), "thumbd gives \(out), the embedded profile \(expected)")
  }

  /// An output-class CMYK profile whose A2B0 table maps every ink combination to Lab (60, -60, 50).
  static func constantGreenCMYKProfile() -> [UInt8] {
    let profile = cmsCreateProfilePlaceholder(nil)!
    defer { cmsCloseProfile(profile) }
    cmsSetProfileVersion(profile, 4.3)
    cmsSetDeviceClass(profile, cmsSigOutputClass)
    cmsSetColorSpace(profile, cmsSigCmykData)
    cmsSetPCS(profile, cmsSigLabData)
    var lab = cmsCIELab(L: 60, a: -60, b: 50)
    var encoded: [cmsUInt16Number] = [0, 0, 0]
    cmsFloat2LabEncoded(&encoded, &lab)
    // Two grid points on each of the four inputs: 16 nodes, every one the same colour.
    let table = Array([[cmsUInt16Number]](repeating: encoded, count: 16).joined())
    let pipeline = cmsPipelineAlloc(nil, 4, 3)!
    defer { cmsPipelineFree(pipeline) }
    let clut = table.withUnsafeBufferPointer { cmsStageAllocCLut16bit(nil, 2, 4, 3, $0.baseAddress)! }
    // A v4 lutAtoBType needs curves around its table: identities.
    cmsPipelineInsertStage(pipeline, cmsAT_END, cmsStageAllocToneCurves(nil, 4, nil))
    cmsPipelineInsertStage(pipeline, cmsAT_END, clut)
    cmsPipelineInsertStage(pipeline, cmsAT_END, cmsStageAllocToneCurves(nil, 3, nil))
    cmsWriteTag(profile, cmsSigAToB0Tag, UnsafeRawPointer(pipeline))
    var white = cmsD50_XYZ().pointee
    cmsWriteTag(profile, cmsSigMediaWhitePointTag, &white)
    var size: cmsUInt32Number = 0
    precondition(cmsSaveProfileToMem(profile, nil, &size) != 0)
    var bytes = [UInt8](repeating: 0, count: Int(size))
    cmsSaveProfileToMem(profile, &bytes, &size)
    return bytes
  }
}
