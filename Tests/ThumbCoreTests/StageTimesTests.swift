import Testing
import ThumbCore

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

  @Test func stagesAddUpFromNothingAndTotalsAddWhatRan() {
    var render = StageTimes()
    render.add(0.25, to: .resize)
    render.add(0.5, to: .resize)
    #expect(render.resize == 0.75 && render[.resize] == 0.75 && render.decode == nil)
    render[.decode] = 1
    var totals = StageTimes(encode: 2)
    totals.add(render)
    totals.add(render)
    #expect(totals == StageTimes(decode: 2, resize: 1.5, encode: 2))
    #expect(Stage.allCases.map(\.rawValue) == ["fetch", "decode", "resize", "encode", "store"])
  }
}
