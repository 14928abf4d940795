/// Which keyframe of a video becomes its poster. Phones' clips often begin black or fade in, and
/// edited clips open on a title over white or a flat colour, so the first frame is a poor poster. Only
/// keyframes are decoded (each decodes on its own); they are looked at in order, up to `window` seconds
/// in, and the first worth showing is taken: not mostly black, not mostly white, not flat. A clip with
/// none gets the best it had (the widest spread of light and dark, the least black or white).
public struct PosterChoice: Sendable {
  /// What a keyframe's luma looks like, on samples taken over the whole picture, in 0...1 (black to
  /// white, after the video range's 16-235 is stretched).
  public struct Look: Sendable, Equatable {
    public var time: Double
    public var mean: Double
    /// The standard deviation of the samples: 0 for a flat frame.
    public var spread: Double
    /// The share of samples under 0.08 and over 0.92.
    public var dark: Double
    public var bright: Double

    public init(time: Double, mean: Double, spread: Double, dark: Double, bright: Double) {
      self.time = time
      self.mean = mean
      self.spread = spread
      self.dark = dark
      self.bright = bright
    }

    /// From samples in 0...1.
    public init(time: Double, samples: [Double]) {
      let n = Double(max(1, samples.count))
      let mean = samples.reduce(0, +) / n
      let variance = samples.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / n
      self.init(
        time: time, mean: mean, spread: variance.squareRoot(),
        dark: Double(samples.filter { $0 < 0.08 }.count) / n,
        bright: Double(samples.filter { $0 > 0.92 }.count) / n)
    }
  }

  /// Seconds of keyframes looked at: some clips' first keyframe after a white title comes 9 s in.
  public var window: Double = 12

  public init() {}

  /// A frame a user would recognise the clip by: mostly neither black (a fade, a dark lens cap) nor
  /// white (a title card), nor flat (a uniform colour).
  public static func isWorthShowing(_ look: Look) -> Bool {
    look.dark < 0.8 && look.bright < 0.8 && look.spread > 0.05 && look.mean > 0.06 && look.mean < 0.94
  }

  /// Among frames none of which is worth showing, the higher the better.
  public static func score(_ look: Look) -> Double {
    look.spread - 0.5 * max(look.dark, look.bright)
  }

  /// What to do after looking at a keyframe, given the best so far.
  public enum Verdict: Equatable, Sendable {
    /// Take this one and stop.
    case take
    /// Keep this one as the best so far and look on.
    case keepAndLookOn
    /// Look on.
    case lookOn
  }

  public func verdict(on look: Look, bestSoFar: Look?) -> Verdict {
    if Self.isWorthShowing(look) { return .take }
    guard let best = bestSoFar else { return .keepAndLookOn }
    return Self.score(look) > Self.score(best) ? .keepAndLookOn : .lookOn
  }
}

/// Where a poster search over an original read by ranges stopped for keyframes it does not hold: it
/// goes on, once they are read, from the same keyframe, with the best it had seen. So the poster is the
/// one a whole read would give, whichever way the file was read.
public struct PosterSearch: Sendable, Equatable {
  /// The index entry the search goes on from.
  public var nextEntry: Int
  /// The best keyframe looked at so far, and its index entry (decoded again if it stays the best).
  public var best: PosterChoice.Look?
  public var bestEntry: Int

  public init(nextEntry: Int, best: PosterChoice.Look?, bestEntry: Int) {
    self.nextEntry = nextEntry
    self.best = best
    self.bestEntry = bestEntry
  }

  /// A search not begun: from the first keyframe (or the poster time's).
  public static let start = PosterSearch(nextEntry: -1, best: nil, bestEntry: -1)
}
