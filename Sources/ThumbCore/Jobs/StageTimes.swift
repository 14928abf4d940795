/// The stages of a job, in pipeline order: the vocabulary of `thumbs.jobs.stage_ms`, of the
/// `thumbd_stage_seconds{stage}` histogram and of `thumbd thumbnail --verbose`.
public enum Stage: String, CaseIterable, Sendable {
  case fetch, decode, resize, encode, store
}

/// Where time went, in seconds per stage: a render's (decode, resize, encode; conversion to sRGB and the
/// ThumbHash count as encoding), a job's (what a worker writes to `thumbs.jobs.stage_ms`,
/// migrations/0007, when the job succeeds), or a run's totals. A stage that did not run is nil.
public struct StageTimes: Sendable, Equatable {
  public var fetch: Double?
  public var decode: Double?
  public var resize: Double?
  public var encode: Double?
  public var store: Double?

  public init(
    fetch: Double? = nil, decode: Double? = nil, resize: Double? = nil, encode: Double? = nil,
    store: Double? = nil
  ) {
    self.fetch = fetch
    self.decode = decode
    self.resize = resize
    self.encode = encode
    self.store = store
  }

  public subscript(stage: Stage) -> Double? {
    get {
      switch stage {
      case .fetch: fetch
      case .decode: decode
      case .resize: resize
      case .encode: encode
      case .store: store
      }
    }
    set {
      switch stage {
      case .fetch: fetch = newValue
      case .decode: decode = newValue
      case .resize: resize = newValue
      case .encode: encode = newValue
      case .store: store = newValue
      }
    }
  }

  /// Adds `seconds` to the stage (a stage that had not run starts from zero).
  public mutating func add(_ seconds: Double, to stage: Stage) {
    self[stage] = (self[stage] ?? 0) + seconds
  }

  /// Adds every stage of `other` that ran: for totals over many renders.
  public mutating func add(_ other: StageTimes) {
    for stage in Stage.allCases { if let seconds = other[stage] { add(seconds, to: stage) } }
  }

  /// The stages that ran, in pipeline order, as milliseconds to a tenth: `{"fetch": 412.5, ...}`.
  /// Operators read these in SQL; finer figures would be noise from the clock and the scheduler.
  public var json: String {
    let fields = Stage.allCases.compactMap { stage -> String? in
      guard let seconds = self[stage], seconds.isFinite, seconds >= 0 else { return nil }
      let tenths = (seconds * 10_000).rounded()
      return "\"\(stage.rawValue)\": \(Int(tenths) / 10).\(Int(tenths) % 10)"
    }
    return "{" + fields.joined(separator: ", ") + "}"
  }
}
