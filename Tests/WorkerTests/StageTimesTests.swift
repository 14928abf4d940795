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

/// What a worker says of a database it cannot start on (SchemaRequirement): decided from values alone.
struct SchemaRequirementVerdictTests {
  @Test func theRequiredMigrationOrANewerOneIsEnough() {
    #expect(SchemaRequirement.problem(newestApplied: SchemaRequirement.version) == nil)
    #expect(SchemaRequirement.problem(newestApplied: "9999") == nil, "migrations only add")
  }

  @Test func anOlderSchemaOrNoneAsksForMigrate() throws {
    let older = try #require(SchemaRequirement.problem(newestApplied: "0001"))
    #expect(older.contains("at migration 0001") && older.contains("needs \(SchemaRequirement.version)"))
    #expect(older.contains("thumbd migrate"))
    #expect(SchemaRequirement.problem(newestApplied: nil)?.contains("thumbd migrate") == true)
  }

  @Test func refusalsAboutTheSetUpAreNamedAndOutagesAreNot() {
    let refused = { (state: String) in
      SchemaRequirement.problem(PostgresError(kind: .query, sqlState: state, message: "m"))
    }
    #expect(refused("42P01")?.contains("no thumbd schema") == true)
    #expect(refused("25006")?.contains("read-only") == true)
    #expect(refused("42501")?.contains("thumbd_worker") == true)
    #expect(refused("40001") == nil)
    #expect(SchemaRequirement.problem(PostgresError(kind: .connection, message: "refused")) == nil)
  }
}
