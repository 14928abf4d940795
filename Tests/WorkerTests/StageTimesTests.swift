import Queue
import Testing

/// thumbs.jobs.stage_ms as written: milliseconds to a tenth, stages in pipeline order, absent stages left
/// out, and nothing PostgreSQL's jsonb would refuse.
struct StageTimesTests {
  @Test func millisecondsToATenthInPipelineOrder() {
    let times = StageTimes(fetch: 0.41249, decode: 0.0881, resize: 0.02034, encode: 0.031, store: 0.00004)
    #expect(times.json == #"{"fetch": 412.5, "decode": 88.1, "resize": 20.3, "encode": 31.0, "store": 0.0}"#)
  }

  @Test func stagesThatDidNotRunAreLeftOut() {
    #expect(StageTimes(fetch: 1.5).json == #"{"fetch": 1500.0}"#)
    #expect(StageTimes().json == "{}")
  }

  @Test func aClockThatWentWrongWritesNothingInvalid() {
    #expect(
      StageTimes(fetch: -0.001, decode: .nan, resize: .infinity, encode: 2).json == #"{"encode": 2000.0}"#)
  }
}
