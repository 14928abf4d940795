import Foundation
import TestSupport
import Testing
import ThumbCore

/// A worker given an upload cut short a few bytes before its end: the job succeeds and says so in its
/// row, its event (the webhook's body) and a metric; the same photo cut in half fails as corrupt_image.
@Suite(
  .serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)),
  .enabled(if: WorkerProcess.binary != nil, Comment(rawValue: WorkerProcess.skipReason)))
struct TruncatedUploadTests {
  @Test func aShortUploadSucceedsWithItsWarningAndAHalfOneFails() async throws {
    let database = try TestDatabase.create()
    let root = try makeTemporaryDirectory()
    let photo = try makeTestJPEG(width: 1600, height: 1200)
    try Data(photo.dropLast(2)).write(to: root.appendingPathComponent("short.jpg"))
    try Data(photo.prefix(photo.count / 2)).write(to: root.appendingPathComponent("half.jpg"))
    let origin = try TestOrigin(root: root)
    let storage = root.appendingPathComponent("thumbnails")
    let worker = try WorkerProcess(databaseURL: database, storage: storage)
    defer { worker.send(SIGKILL) }
    let port = try #require(await worker.httpPort(), "log:\n\(worker.log)")
    let short = try sql(
      database, "SELECT thumbs.enqueue($1, external_id => 'short')", [origin.url("/files/short.jpg")]
    ).rows[0][0]!
    let half = try sql(database, "SELECT thumbs.enqueue($1)", [origin.url("/files/half.jpg")]).rows[0][0]!
    #expect(
      try await eventually(timeout: 30) {
        try sql(database, "SELECT count(*) FROM thumbs.jobs WHERE state IN ('succeeded', 'failed')").rows
          == [["2"]]
      }, "log:\n\(worker.log)")

    let row = try sql(
      database,
      "SELECT state, warnings->0->>'code', warnings->0->>'message', jsonb_array_length(warnings) "
        + "FROM thumbs.jobs WHERE id = $1::bigint", [short]
    ).rows
    #expect(
      row.first?[0] == "succeeded" && row.first?[1] == "truncated_image" && row.first?[3] == "1", "\(row)")
    #expect((row.first?[2] ?? nil)?.contains("the file ends early") == true)
    let event = try sql(
      database, "SELECT payload->'warnings'->0->>'code' FROM thumbs.events WHERE job_id = $1::bigint", [short]
    ).rows
    #expect(event == [["truncated_image"]])
    #expect(
      try sql(
        database,
        "SELECT state, error_code, jsonb_array_length(warnings) FROM thumbs.jobs WHERE id = $1::bigint",
        [half]
      ).rows == [["failed", "corrupt_image", "0"]])
    // A job with nothing to say has an empty list in its event.
    #expect(
      try sql(database, "SELECT payload->'warnings' FROM thumbs.events WHERE job_id = $1::bigint", [half])
        .rows
        == [["[]"]])
    let metrics = try #require(Metrics(HTTPProbe.get(port, "/metrics")))
    #expect(metrics.value("thumbd_job_warnings_total", ["code": "truncated_image"]) == 1)
    withExtendedLifetime(origin) {}
  }
}
