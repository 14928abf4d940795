import Foundation
import Queue
import Testing

@testable import Console
@testable import thumbd

/// The statements of Sources/Queue/SQL against the schema the migrations make: each is prepared and
/// described by the server, and what it takes and returns must be what its header declares. A migration
/// that renames a column a statement reads, or changes a type it binds, fails here, not in a worker.
@Suite(.serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)))
struct SQLStatementTests {
  @Test func everyStatementTakesAndReturnsWhatItsHeaderDeclares() throws {
    let database = try TestDatabase.create()
    let connection = try PostgresConnection(conninfo: database)
    defer { connection.close() }
    for statement in SQL.all + BenchSQL.all + ConsoleSQL.all {
      let described: StatementDescription
      do {
        described = try connection.describe(statement.text)
      } catch {
        Issue.record("\(statement.name).sql does not prepare: \(error)")
        continue
      }
      #expect(
        described.parameterCount == statement.parameters.count,
        "\(statement.name).sql: the server sees \(described.parameterCount) parameters, the header declares \(statement.parameters.count)"
      )
      #expect(
        described.columns == statement.columns,
        "\(statement.name).sql returns \(described.columns), the header declares \(statement.columns)")
      let parameterTypes = try typeNames(described.parameterTypes, on: connection)
      let declaredParameterTypes = try typeNames(statement.parameterTypes, on: connection)
      #expect(
        parameterTypes == declaredParameterTypes,
        "\(statement.name).sql: the server binds \(parameterTypes), the header declares \(declaredParameterTypes)"
      )
      let columnTypes = try typeNames(described.columnTypes, on: connection)
      let declaredColumnTypes = try typeNames(statement.columnTypes, on: connection)
      #expect(
        columnTypes == declaredColumnTypes,
        "\(statement.name).sql: the columns are \(columnTypes), the header declares \(declaredColumnTypes)")
    }
  }

  @Test func describeReportsWhatTheServerInfers() throws {
    let database = try TestDatabase.create()
    let connection = try PostgresConnection(conninfo: database)
    defer { connection.close() }
    let described = try connection.describe("SELECT id, source_url AS url FROM thumbs.jobs WHERE id = $1")
    #expect(described.columns == ["id", "url"])
    #expect(try typeNames(described.parameterTypes, on: connection) == ["bigint"])
    #expect(try typeNames(described.columnTypes, on: connection) == ["bigint", "text"])
    #expect(throws: PostgresError.self) { try connection.describe("SELECT nope FROM thumbs.jobs") }
    // The connection is still usable after a statement that did not prepare.
    #expect(try connection.query("SELECT 1 AS one").namedRows.first?.int("one") == 1)
  }

  /// Declared type names (anything regtype reads: `int`, `float8`, `uuid[]`) and OIDs alike, as
  /// PostgreSQL spells them (`integer`, `double precision`, `uuid[]`), so the two compare.
  private func typeNames(_ declared: [String], on connection: PostgresConnection) throws -> [String] {
    try connection.query(
      "SELECT format_type(t::regtype, NULL) AS type FROM unnest($1::text[]) WITH ORDINALITY AS u(t, n) ORDER BY n",
      [PostgresArray.literal(declared)]
    ).namedRows.map { try $0.string("type") }
  }

  private func typeNames(_ oids: [UInt32], on connection: PostgresConnection) throws -> [String] {
    try connection.query(
      "SELECT format_type(t, NULL) AS type FROM unnest($1::oid[]) WITH ORDINALITY AS u(t, n) ORDER BY n",
      [PostgresArray.literal(oids.map(Int.init))]
    ).namedRows.map { try $0.string("type") }
  }
}

/// The .sql files and the Swift generated from them, without a database.
@Suite struct SQLFilesTests {
  @Test func generatedSwiftIsUpToDate() throws {
    let check = try runGenerator(["--check"], root: TestDatabase.repoRoot)
    #expect(
      check.status == 0,
      "Sources/Queue/Generated/Statements.swift is stale: run `make sql` (scripts/gen-sql.py)\n\(check.output)"
    )
  }

  @Test func checkFailsWhenAStatementChanges() throws {
    // A copy of the generator, the .sql files and the generated Swift, in a folder of their own.
    let root = try makeTemporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    for path in [
      "scripts/gen-sql.py", "Sources/Queue/SQL", "Sources/Queue/Generated", "Sources/thumbd/SQL",
      "Sources/thumbd/Generated", "Sources/Console/SQL", "Sources/Console/Generated",
    ] {
      let target = root.appendingPathComponent(path)
      try FileManager.default.createDirectory(
        at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
      try FileManager.default.copyItem(at: TestDatabase.repoRoot.appendingPathComponent(path), to: target)
    }
    #expect(try runGenerator(["--check"], root: root).status == 0)
    let file = root.appendingPathComponent("Sources/Queue/SQL/withdraw_worker.sql")
    let text = try String(contentsOf: file, encoding: .utf8)
    try (text + "\n  AND true\n").write(to: file, atomically: true, encoding: .utf8)
    #expect(try runGenerator(["--check"], root: root).status == 1)
    #expect(try runGenerator([], root: root).status == 0)
    #expect(try runGenerator(["--check"], root: root).status == 0)
    // A header that does not match the statement is refused.
    try text.replacingOccurrences(of: "-- params: worker_id text", with: "-- params: none")
      .write(to: file, atomically: true, encoding: .utf8)
    let refused = try runGenerator([], root: root)
    #expect(refused.status == 2 && refused.output.contains("withdraw_worker.sql"))
    // Parameters are named in the statement: a positional one, a name the header does not declare, and
    // a declared name the statement does not use are each refused.
    for (body, says) in [
      ("DELETE FROM thumbs.workers WHERE id = $1", "not `$n`"),
      ("DELETE FROM thumbs.workers WHERE id = @worker", "@worker"),
      ("DELETE FROM thumbs.workers WHERE id = @worker_id AND host = @host", "@host"),
      ("DELETE FROM thumbs.workers WHERE id = 'w'", "does not use"),
    ] {
      try text.replacingOccurrences(of: "DELETE FROM thumbs.workers WHERE id = @worker_id", with: body)
        .write(to: file, atomically: true, encoding: .utf8)
      let named = try runGenerator([], root: root)
      #expect(named.status == 2 && named.output.contains(says), "\(body): \(named.output)")
    }
    // PostgreSQL's operators that contain @ are not parameters.
    try text.replacingOccurrences(
      of: "DELETE FROM thumbs.workers WHERE id = @worker_id",
      with:
        "DELETE FROM thumbs.workers WHERE id = @worker_id AND source_schemes @> '{}' AND '{}' <@ source_schemes"
    )
    .write(to: file, atomically: true, encoding: .utf8)
    #expect(try runGenerator([], root: root).status == 0)
  }

  @Test(arguments: [
    ("Sources/Queue/SQL", SQL.all), ("Sources/thumbd/SQL", BenchSQL.all),
    ("Sources/Console/SQL", ConsoleSQL.all),
  ])
  func statementsAreNamedAfterTheirFiles(folder: String, statements: [SQLStatement]) throws {
    let folder = TestDatabase.repoRoot.appendingPathComponent(folder)
    let files = try FileManager.default.contentsOfDirectory(atPath: folder.path)
      .filter { $0.hasSuffix(".sql") && $0 != "schema.sql" }
    #expect(Set(files) == Set(statements.map { $0.name + ".sql" }))
    #expect(Set(statements.map(\.name)).count == statements.count)
    for statement in statements {
      #expect(statement.parameters.count == statement.parameterTypes.count)
      #expect(statement.columns.count == statement.columnTypes.count)
    }
  }

  @Test func rowsAreReadByColumnName() throws {
    let result = QueryResult(
      columns: ["id", "lease_token", "spec", "ratio", "done"],
      rows: [["7", "abc", nil, "0.5", "t"], ["8", "def", "{}", "1", "f"]])
    let rows = result.namedRows
    #expect(try rows.map { try $0.int64("id") } == [7, 8])
    #expect(try rows[0].string("lease_token") == "abc")
    #expect(try rows[0].value("spec") == nil)
    #expect(rows[1]["spec"] == "{}")
    #expect(try rows[0].double("ratio") == 0.5)
    #expect(try rows.map { try $0.bool("done") } == [true, false])
    let missing = #expect(throws: PostgresError.self) { try rows[0].value("lease") }
    #expect(missing?.message.contains("\"lease\"") == true)
    #expect(throws: PostgresError.self) { try rows[0].string("spec") }
    #expect(throws: PostgresError.self) { try rows[0].int("lease_token") }
  }

  @Test func typedRowsDecodeByNameWithNullsWhereTheHeaderAllowsThem() throws {
    let result = QueryResult(
      columns: [
        "id", "source_url", "profile", "attempts", "max_attempts", "lease_token", "owner", "spec",
        "spec_version",
      ],
      rows: [
        ["7", "http://a/b.jpg", "default", "1", "5", "abc", nil, nil, nil],
        ["8", "u", "p", "2", "5", "def", "user-8", "{}", "3"],
      ])
    let rows = try result.namedRows.map { row throws(PostgresError) in try SQL.LeaseJobs.Row(row) }
    #expect(rows.map(\.id) == [7, 8])
    #expect(rows[0].sourceURL == "http://a/b.jpg" && rows[0].maxAttempts == 5 && rows[0].leaseToken == "abc")
    #expect(rows.map(\.spec) == [nil, "{}"])
    #expect(rows.map(\.specVersion) == [nil, 3])
    #expect(rows.map(\.owner) == [nil, "user-8"])
    // NULL where the header does not allow it, a value of the wrong type, a column missing: errors.
    let null = QueryResult(columns: result.columns, rows: [["7", nil, "p", "1", "5", "abc", nil, nil, nil]])
    #expect(throws: PostgresError.self) { try SQL.LeaseJobs.Row(null.namedRows[0]) }
    let text = QueryResult(
      columns: result.columns, rows: [["seven", "u", "p", "1", "5", "abc", nil, nil, nil]])
    let wrong = #expect(throws: PostgresError.self) { try SQL.LeaseJobs.Row(text.namedRows[0]) }
    #expect(wrong?.message.contains("\"id\"") == true)
    let short = QueryResult(columns: ["id"], rows: [["7"]])
    #expect(throws: PostgresError.self) { try SQL.LeaseJobs.Row(short.namedRows[0]) }
  }

  @Test func typedParametersAreTheValuesInTheOrderOfTheirPlaceholders() {
    let original = SQL.RecordOriginal.Parameters(
      url: "http://a/b.jpg", bytes: 1200, sha256: "ab", contentType: "image/jpeg", etag: nil,
      lastModified: nil, format: "jpeg", width: 640, height: nil, fetchedBy: "w1", revalidated: true,
      bytesRead: 300, indexSha256: nil)
    #expect(
      original.values == [
        "http://a/b.jpg", "1200", "ab", "image/jpeg", nil, nil, "jpeg", "640", nil, "w1", "t", "300", nil,
      ])
    #expect(original.values.count == SQL.RecordOriginal.statement.parameters.count)
    let failed = SQL.FailJobs.Parameters(
      ids: [3, 4], tokens: ["t1", "t\"2"], retryAfter: [1.5, nil], codes: ["timeout", "not_found"],
      messages: ["a,b", "c"], deferred: [false, true], media: [nil, #"{"kind": "video"}"#])
    #expect(
      failed.values == [
        #"{"3","4"}"#, #"{"t1","t\"2"}"#, #"{"1.5",NULL}"#, #"{"timeout","not_found"}"#, #"{"a,b","c"}"#,
        #"{"f","t"}"#, #"{NULL,"{\"kind\": \"video\"}"}"#,
      ])
    #expect(NoParameters().values.isEmpty)
  }
}

/// Runs scripts/gen-sql.py of `root` with python3; its exit status and what it printed.
func runGenerator(_ arguments: [String], root: URL) throws -> (status: Int32, output: String) {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
  process.arguments = ["python3", root.appendingPathComponent("scripts/gen-sql.py").path] + arguments
  let output = Pipe()
  process.standardOutput = output
  process.standardError = output
  try process.run()
  let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
  process.waitUntilExit()
  return (process.terminationStatus, text)
}
