/// Where one job's time went, in seconds per stage: what a worker writes to `thumbs.jobs.stage_ms`
/// (migrations/0007) when the job succeeds. A stage that did not run for the job is nil.
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

  /// The stages that ran, in pipeline order, as milliseconds to a tenth: `{"fetch": 412.5, ...}`.
  /// Operators read these in SQL; finer figures would be noise from the clock and the scheduler.
  public var json: String {
    let stages: [(String, Double?)] = [
      ("fetch", fetch), ("decode", decode), ("resize", resize), ("encode", encode), ("store", store),
    ]
    let fields = stages.compactMap { name, seconds -> String? in
      guard let seconds, seconds.isFinite, seconds >= 0 else { return nil }
      let tenths = (seconds * 10_000).rounded()
      return "\"\(name)\": \(Int(tenths) / 10).\(Int(tenths) % 10)"
    }
    return "{" + fields.joined(separator: ", ") + "}"
  }
}
