import ThumbCore

/// A JPEG that ends before its last scan does, as an upload cut short leaves it. libjpeg warns
/// ("Premature end of JPEG file") and decodes every block it never received as zero coefficients: flat
/// mid-grey, 128 in every component, from the first missing block to the bottom. Browsers and libvips
/// show such a file with its grey; thumbd renders it too when the grey is a thin strip of a single-scan
/// (baseline) file and refuses it as `corrupt_image` otherwise.
///
/// The threshold is from cuts of real phone JPEGs (12-16 MP, 2.6-4.2 MB; docs/imaging.md): losing up to
/// 4 KB left no grey row at all, 32 KB left 0.5-2% of the rows grey, a tenth of the file 7-15%, half of
/// it 33-53%. Up to 1% of the height (30 rows of a 12 MP photo, 16 pixels of a 1600 variant) is
/// rendered, with a warning.
enum TruncatedJPEG {
  static let maxMissingShare = 0.01

  /// The rows at the bottom that never arrived, in rows of `image`'s size: the fewest, over the planes,
  /// of trailing rows whose every sample is 128 (±1: CMYK and RGB files pass through a conversion).
  static func missingRows(_ image: PlanarImage) -> Int {
    var missing = image.size.height
    for (index, plane) in image.planes.enumerated() {
      let vertical = image.subsampling[index].vertical
      var flat = 0
      plane.withUnsafeBufferPointer { samples in
        row: for y in stride(from: plane.height - 1, through: 0, by: -1) {
          let start = y * plane.stride
          for x in 0..<plane.width where !(127...129).contains(samples[start + x]) { break row }
          flat += 1
        }
      }
      missing = min(missing, flat * vertical)
    }
    return missing
  }

  /// After a decode libjpeg warned about (`said`: its first warning): nil when the file did not end
  /// early (a harmless warning: stray bytes between markers); a warning when it did and little is
  /// missing; `corrupt_image` when more is missing, or when the file has more than one scan (a
  /// progressive file cut short is complete but blurred from the cut down, with no flat rows to count).
  /// `image` is the decode (at any DCT scale); `height` the picture's full stored height.
  static func judge(
    _ image: PlanarImage, file: [UInt8], said: String, height: Int
  ) throws(JobError)
    -> RenderWarning?
  {
    let missing = missingRows(image)
    // libjpeg keeps the first warning's text: an early end after a harmless warning shows as rows only.
    guard said.contains("Premature end") || missing > 0 else { return nil }
    if file.withUnsafeBytes(JPEGSegments.scanCount) > 1 {
      throw JobError(.corruptImage, "JPEG data: the file ends early, and it has several scans (progressive)")
    }
    let share = Double(missing) / Double(max(image.size.height, 1))
    let rows = Int((share * Double(height)).rounded())
    let percent = share * 100
    guard share <= maxMissingShare else {
      throw JobError(
        .corruptImage,
        "JPEG data: the file ends early and \(formatted(percent))% of the picture is missing "
          + "(at most \(formatted(maxMissingShare * 100))% is rendered)")
    }
    let message =
      rows == 0
      ? "the file ends early: less than one row of blocks of the picture is missing"
      : "the file ends early: \(formatted(percent))% of the picture (its last \(rows) of \(height) rows as "
        + "stored) is missing and shown grey"
    return RenderWarning(code: RenderWarning.truncatedImage, message: message)
  }

  private static func formatted(_ value: Double) -> String {
    let tenths = (value * 10).rounded() / 10
    return tenths == tenths.rounded() ? "\(Int(tenths))" : "\(tenths)"
  }
}
