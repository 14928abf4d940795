import Foundation
import TestSupport
import Testing

/// `thumbd console` over HTTP (curl), for what a browser test does not show: it will not start without
/// a password; the headers and cookie flags; a session is needed for everything but /healthz and the
/// login; the right password right after a wrong one logs in; and a read-only console shows no action
/// and refuses one with a valid token, changing nothing.
@Suite(
  .serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)),
  .enabled(if: WorkerProcess.binary != nil, Comment(rawValue: WorkerProcess.skipReason)))
struct ConsoleHTTPTests {
  static let password = "correct horse battery staple"

  /// One exchange through curl: status, headers (lower-cased names, as sent) and body.
  struct Answer {
    var status: Int
    var headers: [String]
    var body: String
    func header(_ name: String) -> [String] {
      headers.filter { $0.lowercased().hasPrefix(name.lowercased() + ":") }.map {
        String($0.dropFirst(name.count + 1)).trimmingCharacters(in: .whitespaces)
      }
    }
  }

  final class Client: @unchecked Sendable {
    let base: String
    let jar: URL
    init(base: String, folder: URL) {
      self.base = base
      jar = folder.appendingPathComponent("cookies-\(UUID().uuidString)")
    }

    func request(_ path: String, form: [(String, String)]? = nil, headers: [String] = []) throws -> Answer {
      var arguments = ["-s", "-i", "-b", jar.path, "-c", jar.path, base + path]
      for header in headers { arguments += ["-H", header] }
      if let form {
        for (name, value) in form { arguments += ["--data-urlencode", "\(name)=\(value)"] }
      }
      let run = try runProgram("/usr/bin/curl", arguments)
      let parts = run.output.components(separatedBy: "\r\n\r\n")
      let head = parts.first?.components(separatedBy: "\r\n") ?? []
      let status = head.first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
      return Answer(
        status: status, headers: Array(head.dropFirst()),
        body: parts.dropFirst().joined(separator: "\r\n\r\n"))
    }

    /// The value of the first `csrf` field of a page.
    static func token(_ page: String) -> String? {
      guard let range = page.range(of: "name=\"csrf\" value=\"") else { return nil }
      return String(page[range.upperBound...].prefix { $0 != "\"" })
    }

    func logIn(_ password: String) throws -> Answer {
      let form = try request("/login")
      return try request("/login", form: [("csrf", Self.token(form.body) ?? ""), ("password", password)])
    }
  }

  func start(_ database: String, folder: URL, readOnly: Bool = false) async throws -> (WorkerProcess, Client)
  {
    let console = try WorkerProcess(
      databaseURL: database, storage: folder, settings: ["THUMBD_CONSOLE_PASSWORD": Self.password],
      command: ["console", "--listen", "127.0.0.1:0"] + (readOnly ? ["--read-only"] : []))
    let port = try #require(await console.httpPort(line: "console listening"), "\(console.log)")
    return (console, Client(base: "http://127.0.0.1:\(port)", folder: folder))
  }

  @Test func itRefusesToStartWithoutAPassword() throws {
    let binary = try #require(WorkerProcess.binary)
    let run = try runProgram(
      binary.path, ["console"],
      environment: ["DATABASE_URL": "postgresql://nobody@127.0.0.1:1/x", "PATH": "/usr/bin:/bin"],
      withStandardError: true)
    #expect(run.code == 1 && run.output.contains("password"), "\(run.code): \(run.output)")
  }

  @Test func sessionsHeadersAndTheLogin() async throws {
    let database = try TestDatabase.create()
    let folder = try makeTemporaryDirectory()
    defer { try? FileManager.default.removeItem(at: folder) }
    let (console, client) = try await start(database, folder: folder)
    let id = try #require(
      try sql(database, "SELECT thumbs.enqueue('https://example.com/a.jpg')").rows.first?[0] ?? nil)

    #expect(try client.request("/healthz").status == 200)
    for path in ["/", "/jobs", "/jobs/\(id)", "/workers", "/profiles"] {
      let answer = try client.request(path)
      #expect(answer.status == 303 && answer.header("location").first?.hasPrefix("/login") == true, "\(path)")
    }
    #expect(try client.request("/jobs/\(id)/variants/small").status == 401)
    #expect(try client.request("/live").status == 401)
    // A POST without a session changes nothing.
    #expect(try client.request("/jobs/\(id)/cancel", form: [("csrf", "x")]).status == 403)
    // The login form's own token is needed too.
    #expect(try client.request("/login", form: [("password", Self.password)]).status == 403)

    let refused = try client.logIn("wrong")
    #expect(
      refused.status == 401 && refused.header("set-cookie").allSatisfy { !$0.hasPrefix("thumbd_session=") })
    let started = Date()
    let accepted = try client.logIn(Self.password)
    #expect(accepted.status == 303, "the right password right after a wrong one logs in")
    #expect(Date().timeIntervalSince(started) < 3, "slowed down, not locked out")
    let cookie = try #require(accepted.header("set-cookie").first { $0.hasPrefix("thumbd_session=") })
    #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict") && !cookie.contains("Secure"))

    let page = try client.request("/jobs/\(id)")
    #expect(page.status == 200)
    let policy = try #require(page.header("content-security-policy").first)
    #expect(policy.contains("script-src 'self'") && policy.contains("frame-ancestors 'none'"))
    #expect(page.header("x-content-type-options") == ["nosniff"])
    #expect(page.body.contains(">Retry</button>") && page.body.contains(">Forget</button>"))

    // Behind a TLS proxy the cookie is Secure.
    let behindTLS = Client(base: client.base, folder: folder)
    let form = try behindTLS.request("/login", headers: ["X-Forwarded-Proto: https"])
    let secure = try behindTLS.request(
      "/login", form: [("csrf", Client.token(form.body) ?? ""), ("password", Self.password)],
      headers: ["X-Forwarded-Proto: https"])
    #expect(secure.header("set-cookie").first { $0.hasPrefix("thumbd_session=") }?.contains("Secure") == true)

    // Logging out ends the session.
    let token = try #require(Client.token(page.body))
    #expect(try client.request("/logout", form: [("csrf", token)]).status == 303)
    #expect(try client.request("/").status == 303)
    _ = console
  }

  /// The console listens for the queue's and the events' notifications only while a page holds its
  /// event stream: each listening backend costs the database at every notifying commit.
  @Test func itListensOnlyWhileAPageIsOpen() async throws {
    let database = try TestDatabase.create()
    let folder = try makeTemporaryDirectory()
    defer { try? FileManager.default.removeItem(at: folder) }
    let (console, client) = try await start(database, folder: folder)
    #expect(try client.logIn(Self.password).status == 303)
    func listening() throws -> Int {
      let rows = try sql(
        database,
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'"
      ).rows
      return Int(rows.first?.first.flatMap { $0 } ?? "") ?? -1
    }
    try await Task.sleep(for: .milliseconds(500))
    #expect(try listening() == 0, "no page open: no listener")
    var page: HelperProcess? = try HelperProcess(
      "/usr/bin/curl", ["-s", "-N", "-b", client.jar.path, client.base + "/live"], quiet: true)
    #expect(await eventually(timeout: 10) { (try? listening()) == 2 }, "a page open: both channels")
    page = nil
    // The console finds out at its next write to the stream (a keep-alive every 5 s).
    #expect(await eventually(timeout: 20) { (try? listening()) == 0 }, "the page gone: no listener")
    _ = (console, page)
  }

  @Test func aReadOnlyConsoleShowsNoActionAndRefusesOne() async throws {
    let database = try TestDatabase.create()
    let folder = try makeTemporaryDirectory()
    defer { try? FileManager.default.removeItem(at: folder) }
    let (console, client) = try await start(database, folder: folder, readOnly: true)
    let id = try #require(
      try sql(database, "SELECT thumbs.enqueue('https://example.com/a.jpg')").rows.first?[0] ?? nil)
    #expect(try client.logIn(Self.password).status == 303)
    let page = try client.request("/jobs/\(id)")
    #expect(page.status == 200 && page.body.contains("read-only"))
    #expect(!page.body.contains(">Cancel</button>") && !page.body.contains("action=\"/jobs/\(id)/"))
    let token = try #require(Client.token(page.body))  // the logout form's
    let cancel = try client.request("/jobs/\(id)/cancel", form: [("csrf", token)])
    #expect(cancel.status == 403 && cancel.body.contains("read-only"))
    let save = try client.request(
      "/profiles", form: [("csrf", token), ("name", "x"), ("spec", #"{"variants": []}"#)])
    #expect(save.status == 403)
    #expect(try sql(database, "SELECT state FROM thumbs.jobs").rows == [["queued"]])
    #expect(try sql(database, "SELECT count(*) FROM thumbs.profiles WHERE name = 'x'").rows == [["0"]])
    _ = console
  }
}
