import Queue
import Testing

/// What a worker says of a database it cannot start on (SchemaRequirement): decided from values alone.
struct SchemaRequirementTests {
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
