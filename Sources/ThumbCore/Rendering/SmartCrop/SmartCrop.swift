/// Where a `cover` variant's window sits when its crop is `attention` or `entropy` (CropStrategy),
/// decided on a small upright picture of the whole original (CropAnalysisImage). Pure and
/// deterministic: the same picture always gives the same crop, and a picture with nothing to choose
/// between gives exactly the centre crop.
public enum SmartCrop {
  /// The analysis picture's longest side, at most: enough to see where a subject is, few enough pixels
  /// (65,536) that scoring every window position costs next to nothing beside the resampling.
  public static let analysisSide = 256

  /// Windows scoring within this fraction of the best are taken as equally good (see `bestOrigin`), so
  /// that noise-level differences do not move the crop.
  static let tolerance = 0.01

  /// A window's top-left corner in analysis pixels.
  public struct Origin: Hashable, Sendable, CustomStringConvertible {
    public var x: Int
    public var y: Int

    public init(x: Int, y: Int) {
      self.x = x
      self.y = y
    }

    public var description: String { "(\(x), \(y))" }
  }

  /// The part of the upright original (of size `original`) a cover variant shows: `centred` (the centre
  /// crop VariantLayout made, whose size stays as it is) moved to the window `strategy` prefers in
  /// `analysis`, a smaller picture of the whole original. When the best window is the middle one (a flat
  /// picture, or a subject in the middle), `centred` itself, so such crops are the centre crop exactly.
  public static func region(
    _ centred: Region, in original: PixelSize, strategy: CropStrategy, analysis: CropAnalysisImage
  ) -> Region {
    if strategy == .centre { return centred }
    let sx = Double(analysis.width) / Double(original.width)
    let sy = Double(analysis.height) / Double(original.height)
    let window = PixelSize(
      width: clamp(Int((centred.width * sx).rounded()), 1, analysis.width),
      height: clamp(Int((centred.height * sy).rounded()), 1, analysis.height))
    let origin = self.origin(of: window, in: analysis, strategy: strategy)
    if origin == centredOrigin(of: window, in: analysis.size) { return centred }
    // The chosen window's centre, in original pixels; the region keeps its size and stays inside.
    let centreX = (Double(origin.x) + Double(window.width) / 2) / sx
    let centreY = (Double(origin.y) + Double(window.height) / 2) / sy
    return Region(
      x: min(max(centreX - centred.width / 2, 0), Double(original.width) - centred.width),
      y: min(max(centreY - centred.height / 2, 0), Double(original.height) - centred.height),
      width: centred.width, height: centred.height)
  }

  /// The best origin for a window of `window` analysis pixels (clamped to the picture) by `strategy`.
  public static func origin(
    of window: PixelSize, in image: CropAnalysisImage, strategy: CropStrategy
  ) -> Origin {
    let window = PixelSize(
      width: clamp(window.width, 1, image.width), height: clamp(window.height, 1, image.height))
    switch strategy {
    case .centre:
      return centredOrigin(of: window, in: image.size)
    case .attention:
      return bestOrigin(of: window, in: image.size, scores: Attention.windowScores(image, window: window))
    case .entropy:
      return bestOrigin(of: window, in: image.size, scores: Entropy.windowScores(image, window: window))
    }
  }

  /// The middle window (rounded towards the top left).
  public static func centredOrigin(of window: PixelSize, in size: PixelSize) -> Origin {
    Origin(x: (size.width - window.width) / 2, y: (size.height - window.height) / 2)
  }

  /// The winner among every window position, given each one's score (row-major, one per origin).
  ///
  /// A subject smaller than the window fits wholly in many windows, which then score alike: the best
  /// window's plateau (its neighbours along each axis within `tolerance` of the best score). Taking the
  /// middle of that plateau, rather than its first window, puts the subject in the middle of the crop
  /// instead of against its edge; on a picture that scores the same everywhere the plateau is every
  /// position and its middle is the centre. When nothing scores at all, the centre.
  static func bestOrigin(of window: PixelSize, in size: PixelSize, scores: [Double]) -> Origin {
    let columns = size.width - window.width + 1
    let rows = size.height - window.height + 1
    precondition(scores.count == columns * rows, "one score per window position")
    var best = 0
    for i in scores.indices where scores[i] > scores[best] { best = i }
    guard scores[best] > 0 else { return centredOrigin(of: window, in: size) }
    let good = scores[best] * (1 - tolerance)
    func isGood(_ x: Int, _ y: Int) -> Bool { scores[y * columns + x] >= good }

    let y = best / columns
    var (left, right) = (best % columns, best % columns)
    while left > 0 && isGood(left - 1, y) { left -= 1 }
    while right < columns - 1 && isGood(right + 1, y) { right += 1 }
    let x = (left + right) / 2
    var (top, bottom) = (y, y)
    while top > 0 && isGood(x, top - 1) { top -= 1 }
    while bottom < rows - 1 && isGood(x, bottom + 1) { bottom += 1 }
    return Origin(x: x, y: (top + bottom) / 2)
  }
}
