import Foundation
import Queue
import TestSupport
import Testing
import ThumbCore

/// Mistakes refused where they are made (migrations/0015): `thumbs.enqueue` refuses a source that can
/// never be fetched, `thumbs.profiles` refuses a spec the worker would refuse, in the worker's words, and
/// `thumbs.check_profile` checks one without saving it. The database and the worker answer alike, and a
/// malformed source that reaches a worker some other way fails once, as `http_error`.
@Suite(.serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)))
struct BackendChecksTests {
  /// The SQLSTATE and message a statement fails with, or nil when it succeeds.
  func refusal(_ url: String, _ statement: String, _ parameters: [String?] = []) -> (String, String)? {
    do {
      try sql(url, statement, parameters)
      return nil
    } catch let error as PostgresError {
      return (error.sqlState ?? "none", error.message)
    } catch {
      return ("none", "\(error)")
    }
  }

  @Test func theDatabaseAndTheWorkerAgreeOnEverySourceProblem() throws {
    let database = try TestDatabase.create()
    for (url, problem) in sourceProblemCases {
      let answer = try sql(database, "SELECT thumbs.source_problem($1)", [url]).rows
      #expect(answer == [[problem]], "\(url)")
      #expect(SourceURL.problem(url)?.description == problem, "\(url)")
    }
  }

  @Test func theDatabaseAndTheWorkerAgreeOnEveryProfileSpec() throws {
    let database = try TestDatabase.create()
    var invalid = 0
    for spec in profileSpecCases {
      let rows = try sql(
        database, "SELECT problem FROM unnest(thumbs.check_profile($1::jsonb)) AS problem", [spec]
      ).rows
      let worker = ProfileSpec.problems(in: Data(spec.utf8))
      #expect(rows.map { $0[0] ?? "" } == worker, "\(spec)")
      if !worker.isEmpty { invalid += 1 }
    }
    // The table is not all valid or all invalid: both sides have something to agree on.
    #expect(invalid > 20 && invalid < profileSpecCases.count - 3)
  }

  @Test func enqueueRefusesASourceThatCanNeverBeFetchedAndSaysWhy() throws {
    let database = try TestDatabase.create()
    for (url, problem) in sourceProblemCases {
      let answer = refusal(database, "SELECT thumbs.enqueue($1)", [url])
      if let problem {
        #expect(answer?.0 == "22023", "\(url)")
        #expect(answer?.1.contains(problem) == true, "\(url): \(answer?.1 ?? "accepted")")
      } else {
        #expect(answer == nil, "\(url): \(answer?.1 ?? "")")
      }
    }
    let refused = try #require(
      refusal(database, "SELECT thumbs.enqueue('http://user:hunter2@/a.jpg')"))
    #expect(refused.1.contains("'http://user:****@/a.jpg' has no host"), "\(refused.1)")
    let queued = try sql(database, "SELECT count(*) FROM thumbs.jobs").rows[0][0]
    #expect(queued == String(sourceProblemCases.filter { $0.problem == nil }.count))
  }

  @Test func profilesRefuseAnInvalidSpecInTheWorkersWords() throws {
    let database = try TestDatabase.create()
    let typo = #"{"variants": [{"name": "a", "width": 64, "height": 64, "formatt": "webp"}]}"#
    let worker = try #require(throws: ProfileSpec.Invalid.self) {
      try ProfileSpec.parse(name: "default", json: Data(typo.utf8))
    }
    let update = try #require(
      refusal(database, "UPDATE thumbs.profiles SET spec = $1::jsonb WHERE name = 'default'", [typo]))
    #expect(update.0 == "23514")
    #expect(update.1.contains(worker.description), "\(update.1)")
    let insert = try #require(
      refusal(database, "INSERT INTO thumbs.profiles (name, spec) VALUES ('avatar', $1::jsonb)", [typo]))
    #expect(insert.0 == "23514" && insert.1.contains("profile 'avatar' is invalid: variant 'a': unknown key"))
    // Nothing was saved; a valid change is.
    #expect(
      try sql(database, "SELECT count(*) FROM thumbs.profiles WHERE spec::text LIKE '%formatt%'").rows == [
        ["0"]
      ])
    try sql(
      database,
      "UPDATE thumbs.profiles SET spec = jsonb_set(spec, '{variants,0,quality}', '85') WHERE name = 'default'"
    )
    #expect(
      try sql(database, "SELECT thumbs.check_profile($1::jsonb)", [typo]).rows
        == [
          [
            #"{"variant 'a': unknown key \"formatt\" (known: animated, crop, fit, format, height, name, progressive, quality, speed, subsampling, width)"}"#
          ]
        ]
    )
  }

  @Test func aMalformedSourceWrittenPastEnqueueFailsOnceAsHTTPError() async throws {
    let database = try TestDatabase.create()
    let fixture = try QueueFixture()
    // Written into the table directly (an operator's INSERT), not through thumbs.enqueue.
    let ids = try sql(
      database,
      """
      INSERT INTO thumbs.jobs (source_url, profile)
      VALUES ('http:///nohost.jpg', 'default'), ('http://127.0.0.1:99999/photo.jpg', 'default'),
             ('not a url', 'default'), ('ftp://127.0.0.1/photo.jpg', 'default')
      RETURNING id
      """
    ).rows.map { $0[0]! }
    let totals = try await drainQueue(databaseURL: database, storage: fixture.storage)
    #expect(totals.failed == 4 && totals.succeeded == 0)
    let rows = try sql(
      database,
      "SELECT state, error_code, attempts FROM thumbs.jobs WHERE id = ANY($1::bigint[]) ORDER BY id",
      ["{\(ids.joined(separator: ","))}"]
    ).rows
    #expect(
      rows == [
        ["failed", "http_error", "1"], ["failed", "http_error", "1"], ["failed", "http_error", "1"],
        ["failed", "blocked_source", "1"],
      ])
    let message = try sql(database, "SELECT last_error FROM thumbs.jobs WHERE id = $1::bigint", [ids[0]]).rows
    #expect(message == [["the source URL http:///nohost.jpg has no host"]])
    // Nothing was fetched.
    #expect(try await fixture.origin.requestCount("/photo.jpg") == 0)
  }
}
