import Foundation
import Queue
import TestSupport
import Testing

/// A worker whose database is not ready for it (a schema older than its statements, no schema at all, a
/// read-only standby) says why in one line an operator can act on, stays unready, leases nothing, and
/// starts by itself once the database is fixed.
@Suite(
  .serialized,
  .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)),
  .enabled(if: WorkerProcess.binary != nil, Comment(rawValue: WorkerProcess.skipReason)))
struct SchemaRequirementTests {
  @Test func aWorkerNewerThanItsSchemaWaitsForTheMigrationThenRuns() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    // The schema as the release before this one left it, as far as the worker can tell.
    try sql(database, "DELETE FROM thumbs.schema_migrations WHERE version = $1", [SchemaRequirement.version])
    let id = try sql(database, "SELECT thumbs.enqueue($1) AS id", [fixture.origin.url("/files/photo.jpg")])
      .ids[0]
    let worker = try WorkerProcess(databaseURL: database, storage: fixture.storage)
    let port = try #require(await worker.httpPort(), "log:\n\(worker.log)")
    #expect(
      await eventually(timeout: 15) { worker.log.contains("database not ready for this worker") },
      "log:\n\(worker.log)")
    #expect(
      worker.log.contains("needs \(SchemaRequirement.version)") && worker.log.contains("thumbd migrate"))
    #expect(HTTPProbe.get(port, "/readyz").status == 503)
    #expect(HTTPProbe.get(port, "/healthz").status == 200)
    let untouched = try sql(
      database, "SELECT state, attempts FROM thumbs.jobs WHERE id = $1::bigint", [String(id)])
    #expect(untouched.rows[0] == ["queued", "0"], "nothing leased on a schema the worker cannot write")
    #expect(try await fixture.origin.requestCount("/files/photo.jpg") == 0)

    // The operator runs this release's migrate: the worker notices and starts, no restart needed.
    let migrate = try runMigrate(database)
    #expect(migrate.code == 0, "\(migrate.output)")
    #expect(
      await eventually(timeout: 30) { HTTPProbe.get(port, "/readyz").status == 200 }, "log:\n\(worker.log)")
    #expect(
      try await eventually(timeout: 20) {
        try sql(database, "SELECT state FROM thumbs.jobs WHERE id = $1::bigint", [String(id)]).rows[0][0]
          == "succeeded"
      }, "log:\n\(worker.log)")
    worker.send(SIGTERM)
    #expect(await worker.waitForExit(timeout: 15) == 0)
  }

  @Test func anUnmigratedOrReadOnlyDatabaseIsNamedAsSuch() async throws {
    let fixture = try QueueFixture()
    // No schema at all: an empty database.
    let empty = try TestDatabase.create()
    try sql(empty, "DROP SCHEMA thumbs CASCADE")
    let first = try WorkerProcess(databaseURL: empty, storage: fixture.storage)
    #expect(
      await eventually(timeout: 15) { first.log.contains("the database has no thumbd schema") },
      "log:\n\(first.log)")
    #expect(!first.log.contains("database unreachable"), "it answered: not an outage")
    first.send(SIGTERM)
    #expect(await first.waitForExit(timeout: 15) == 0)

    // A read-only database, as a hot standby is: its writes are refused with 25006.
    let standby = try TestDatabase.create()
    let name = try #require(URLComponents(string: standby)?.path.dropFirst())
    try sql(standby, "ALTER DATABASE \(name) SET default_transaction_read_only = on")
    let second = try WorkerProcess(databaseURL: standby, storage: fixture.storage)
    #expect(
      await eventually(timeout: 15) { second.log.contains("the database is read-only") },
      "log:\n\(second.log)")
    let port = try #require(await second.httpPort(), "log:\n\(second.log)")
    #expect(HTTPProbe.get(port, "/readyz").status == 503)
    second.send(SIGTERM)
    #expect(await second.waitForExit(timeout: 15) == 0)
  }
}
