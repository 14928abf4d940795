import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Queue
import Storage
import Synchronization
import ThumbCore

/// Every page and action of the console. Pages read with the console's statements (Sources/Console/SQL)
/// and render HTML on the server; actions are one call of the admin SQL functions each, answered with
/// a redirect back to the page and a notice (or, for the page's script, the notice's text).
final class ConsoleRoutes: Sendable {
  let database: ConsoleDatabase
  let store: (any ThumbnailStore)?
  let feed: LiveFeed
  let password: Password
  let sessions: Sessions
  let readOnly: Bool
  let logger: Logger
  let throttle = Mutex(LoginThrottle())

  init(
    database: ConsoleDatabase, store: (any ThumbnailStore)?, feed: LiveFeed, password: Password,
    sessions: Sessions, readOnly: Bool, logger: Logger
  ) {
    self.database = database
    self.store = store
    self.feed = feed
    self.password = password
    self.sessions = sessions
    self.readOnly = readOnly
    self.logger = logger
  }

  static let sessionCookie = "thumbd_session"
  static let loginCookie = "thumbd_login"
  /// Most a form may send (a profile spec is the largest).
  static let maxForm = 256 * 1024

  func register(on router: Router<BasicRequestContext>) {
    router.get("healthz") { _, _ in Self.text(.ok, "ok\n") }
    router.get("static/console.css") { _, _ in
      Self.asset(Assets.css, type: "text/css; charset=utf-8")
    }
    router.get("static/console.js") { _, _ in
      Self.asset(Assets.javascript, type: "text/javascript; charset=utf-8")
    }
    router.get("login") { [self] request, _ in
      self.loginForm(request, next: Form(encoded: request.uri.query ?? "")["next"], refused: false)
    }
    router.post("login") { [self] request, context in try await login(request, context) }
    router.post("logout") { [self] request, context in
      try await withForm(request, context) { session, _ in
        sessions.close(session.id)
        var response = Self.redirect("/login")
        response.headers[values: .setCookie] = [Self.cookie(Self.sessionCookie, "", request, maxAge: 0)]
        return response
      }
    }
    router.get("/") { [self] request, _ in try await page(request) { session in try await overview(session) }
    }
    router.get("jobs") { [self] request, _ in
      try await page(request) { session in try await jobs(request, session) }
    }
    router.get("jobs/:id") { [self] request, context in
      try await page(request) { session in
        try await job(context.parameters.require("id", as: Int64.self), request, session)
      }
    }
    router.get("jobs/:id/variants/:name") { [self] request, context in
      guard sessions.find(request.cookies[Self.sessionCookie]?.value) != nil else {
        return Self.text(.unauthorized, "log in first\n")
      }
      return try await variant(
        context.parameters.require("id", as: Int64.self), context.parameters.require("name"))
    }
    router.get("jobs/:id/forget") { [self] request, context in
      try await page(request) { session in
        try await forgetConfirmation(context.parameters.require("id", as: Int64.self), session)
      }
    }
    for action in JobAction.allCases {
      router.post("jobs/:id/\(action.rawValue)") { [self] request, context in
        try await withForm(request, context, writes: true) { _, form in
          try await perform(action, id: context.parameters.require("id", as: Int64.self), form: form, request)
        }
      }
    }
    router.post("retry-failed") { [self] request, context in
      try await withForm(request, context, writes: true) { _, form in try await retryFailed(form, request) }
    }
    router.get("workers") { [self] request, _ in
      try await page(request) { _ in
        (
          title: "Workers", section: .workers,
          body: WorkersPage.body(try await database.run(ConsoleSQL.Workers.self))
        )
      }
    }
    router.get("profiles") { [self] request, _ in
      try await page(request) { session in try await profiles(session, draft: nil, check: "") }
    }
    router.post("profiles/check") { [self] request, context in
      try await withForm(request, context) { session, form in try await checkProfile(form, session, request) }
    }
    router.post("profiles") { [self] request, context in
      try await withForm(request, context, writes: true) { session, form in
        try await saveProfile(form, session)
      }
    }
    router.get("live") { [self] request, _ in
      guard sessions.find(request.cookies[Self.sessionCookie]?.value) != nil else {
        return Self.text(.unauthorized, "log in first\n")
      }
      return liveStream()
    }
  }

  // MARK: - Sessions and forms

  typealias PageContent = (title: String, section: Layout.Section?, body: HTML)

  /// A page behind the login: 303 to /login without a session. `?notice=` names a fixed notice.
  private func page(
    _ request: Request, _ render: (Sessions.Session) async throws -> PageContent
  ) async throws -> Response {
    guard let session = sessions.find(request.cookies[Self.sessionCookie]?.value) else {
      let next = request.uri.path + (request.uri.query.map { "?" + $0 } ?? "")
      return Self.redirect("/login?next=\(Form.encode(next))")
    }
    do {
      let content = try await render(session)
      let notice = Notice.named(Form(encoded: request.uri.query ?? ""))
      return Self.html(
        Layout.page(
          title: content.title, section: content.section, session: session, readOnly: readOnly,
          notice: notice,
          body: content.body))
    } catch let error as PostgresError {
      logger.warning("console page failed", metadata: ["error": "\(error)"])
      return Self.html(
        Layout.page(
          title: "Database unavailable", section: nil, session: session, readOnly: readOnly,
          body: "<h1>The database did not answer</h1><pre class=\"bad\">\(error.message)</pre>"),
        status: .serviceUnavailable)
    } catch let missing as Missing {
      return Self.html(
        Layout.page(
          title: "Not found", section: nil, session: session, readOnly: readOnly,
          body: "<h1>Not found</h1><p>\(missing.what)</p>"), status: .notFound)
    }
  }

  /// A POST behind the login with its CSRF token checked before anything else is read or done: 403
  /// without it (and in read-only mode for a write), changing nothing.
  private func withForm(
    _ request: Request, _ context: BasicRequestContext, writes: Bool = false,
    _ handle: (Sessions.Session, Form) async throws -> Response
  ) async throws -> Response {
    guard let session = sessions.find(request.cookies[Self.sessionCookie]?.value) else {
      return Self.text(.forbidden, "not logged in: log in and try again\n")
    }
    let form = try await Self.form(request)
    guard let token = form["csrf"], Secrets.equalInConstantTime(token, session.csrf) else {
      return Self.text(
        .forbidden, "the form's security token is missing or wrong: reload the page and try again\n")
    }
    if writes && readOnly { return Self.text(.forbidden, "this console is read-only\n") }
    do {
      return try await handle(session, form)
    } catch let error as PostgresError {
      logger.warning("console action failed", metadata: ["error": "\(error)"])
      return Self.text(.serviceUnavailable, "the database refused or did not answer: \(error.message)\n")
    }
  }

  static func form(_ request: Request) async throws -> Form {
    let body = try await request.body.collect(upTo: maxForm)
    return Form(encoded: String(buffer: body))
  }

  private func loginForm(_ request: Request, next: String?, refused: Bool) -> Response {
    let token = Secrets.token()
    let next = Self.safeNext(next)
    let page = LoginPage.body(refused: refused, next: next, csrf: token)
    var response = Self.html(page, status: refused ? .unauthorized : .ok)
    response.headers[values: .setCookie] = [Self.cookie(Self.loginCookie, token, request, maxAge: 3600)]
    return response
  }

  /// The login: its own CSRF pair (a cookie set with the form and the form's field), then the throttle's
  /// wait, then the password. The right password is let in whatever failures came before.
  private func login(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
    let form = try await Self.form(request)
    guard let token = form["csrf"], let cookie = request.cookies[Self.loginCookie]?.value,
      Secrets.equalInConstantTime(token, cookie)
    else {
      return Self.text(.forbidden, "the login form's security token is missing or wrong: reload the page\n")
    }
    guard let slot = throttle.withLock({ $0.admit(now: .now) }) else {
      var busy = Self.text(.tooManyRequests, "too many login attempts at once: try again in a few seconds\n")
      busy.headers[.retryAfter] = "5"
      return busy
    }
    if slot > .now { try? await Task.sleep(until: slot, clock: .continuous) }
    guard let guess = form["password"], password.matches(guess) else {
      throttle.withLock { $0.failed(now: .now) }
      logger.notice("console login refused")
      return loginForm(request, next: form["next"], refused: true)
    }
    throttle.withLock { $0.succeeded() }
    let session = sessions.open()
    var response = Self.redirect(Self.safeNext(form["next"]))
    response.headers[values: .setCookie] = [
      Self.cookie(Self.sessionCookie, session.id, request, maxAge: nil),
      Self.cookie(Self.loginCookie, "", request, maxAge: 0),
    ]
    return response
  }

  /// Only a path of this console (not `//host`, not a URL): an open redirect would let a link to the
  /// login send the operator elsewhere once logged in.
  static func safeNext(_ next: String?) -> String {
    // Only the characters of a path and query: a browser drops a tab or a line break from a URL, so
    // `/<TAB>/evil.example` would become `//evil.example`.
    guard let next, next.hasPrefix("/"), !next.hasPrefix("//"), !next.contains("\\"),
      next.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7f })
    else { return "/" }
    return next
  }

  // MARK: - Pages

  private func overview(_ session: Sessions.Session) async throws -> PageContent {
    async let queue = database.run(ConsoleSQL.OverviewQueue.self)
    async let minutes = database.run(ConsoleSQL.OverviewMinutes.self)
    async let failures = database.run(ConsoleSQL.OverviewFailures.self)
    async let owners = database.run(ConsoleSQL.OverviewOwners.self)
    async let workers = database.run(ConsoleSQL.Workers.self)
    async let webhooks = database.run(ConsoleSQL.OverviewWebhooks.self)
    guard let counts = try await queue.first else { throw Missing(what: "the queue's counts") }
    let page = OverviewPage(
      queue: counts, minutes: try await minutes, failures: try await failures, owners: try await owners,
      workers: try await workers, webhooks: try await webhooks, session: session, readOnly: readOnly)
    return ("Overview", .overview, page.body)
  }

  private func jobs(_ request: Request, _ session: Sessions.Session) async throws -> PageContent {
    let filter = JobFilter(query: Form(encoded: request.uri.query ?? ""))
    let newest =
      filter.hasIndexedFilter || filter.before != nil
      ? nil : try await database.run(ConsoleSQL.NewestJob.self).first?.id ?? nil
    let floor = filter.floor(newest: newest)
    let rows = try await database.run(ConsoleSQL.JobsPage.self, filter.parameters(floor: floor))
    return (
      "Jobs", .jobs,
      JobsPage.body(filter: filter, floor: floor, rows: rows, session: session, readOnly: readOnly)
    )
  }

  private func job(_ id: Int64, _ request: Request, _ session: Sessions.Session) async throws -> PageContent {
    guard let job = try await database.run(ConsoleSQL.Job.self, .init(id: id)).first else {
      throw Missing(what: "There is no job \(id): it may have been deleted by retention.")
    }
    async let variants = database.run(ConsoleSQL.JobVariants.self, .init(jobID: id))
    async let events = database.run(ConsoleSQL.JobEvents.self, .init(jobID: id))
    async let history = database.run(
      ConsoleSQL.JobHistory.self, .init(id: id, externalID: job.externalID, sourceKey: job.sourceKey))
    var original: ConsoleSQL.JobOriginal.Row?
    if let key = job.sourceKey {
      original = try await database.run(ConsoleSQL.JobOriginal.self, .init(sourceKey: key)).first
    }
    let page = JobPage(
      job: job, variants: try await variants, original: original, events: try await events,
      history: try await history, session: session, readOnly: readOnly)
    return ("Job \(id)", .jobs, page.body)
  }

  private func forgetConfirmation(_ id: Int64, _ session: Sessions.Session) async throws -> PageContent {
    guard let job = try await database.run(ConsoleSQL.Job.self, .init(id: id)).first else {
      throw Missing(what: "There is no job \(id).")
    }
    let preview = try await database.run(ConsoleSQL.ForgetPreview.self, .init(jobID: id))
    return ("Forget", .jobs, JobPage.forgetConfirmation(job: job, preview: preview, session: session))
  }

  private func profiles(
    _ session: Sessions.Session, draft: (name: String, spec: String)?, check: HTML
  ) async throws -> PageContent {
    let saved = try await database.run(ConsoleSQL.Profiles.self)
    return (
      "Profiles", .profiles,
      ProfilesPage.body(profiles: saved, draft: draft, check: check, session: session, readOnly: readOnly)
    )
  }

  /// A variant's bytes, read from the storage by the console: the browser never gets a storage URL.
  private func variant(_ id: Int64, _ name: String) async throws -> Response {
    guard let store else { return Self.text(.notFound, "the console was started without --storage\n") }
    guard
      let object = try await database.run(ConsoleSQL.VariantObject.self, .init(jobID: id, name: name)).first
    else { return Self.text(.notFound, "no such variant\n") }
    let bytes: [UInt8]?
    do {
      bytes = try await store.get(key: object.storageKey)
    } catch {
      return Self.text(.badGateway, "the storage did not give the thumbnail: \(error.message)\n")
    }
    guard let bytes else { return Self.text(.notFound, "the thumbnail is no longer in storage\n") }
    let type = OutputFormat(rawValue: object.format)?.contentType ?? "application/octet-stream"
    return Response(
      status: .ok,
      headers: [
        .contentType: type, .cacheControl: "private, max-age=3600",
        .init("X-Content-Type-Options")!: "nosniff",
      ],
      body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
  }

  // MARK: - Actions

  enum JobAction: String, CaseIterable, Sendable {
    case retry, cancel, rerender, forget
  }

  private func perform(
    _ action: JobAction, id: Int64, form: Form, _ request: Request
  ) async throws -> Response {
    let back = "/jobs/\(id)"
    let outcome: (notice: String, extra: [(String, String?)], done: Bool)
    switch action {
    case .retry:
      let done = try await database.run(ConsoleSQL.RetryJob.self, .init(id: id)).first?.done ?? false
      outcome = (done ? "retried" : "retry-refused", [], done)
    case .cancel:
      let done = try await database.run(ConsoleSQL.CancelJob.self, .init(id: id)).first?.done ?? false
      outcome = (done ? "cancelled" : "cancel-refused", [], done)
    case .rerender:
      let new = try await database.run(ConsoleSQL.RerenderJob.self, .init(id: id)).first?.jobID
      outcome = (new != nil ? "rerendered" : "rerender-refused", [("job", new.map(String.init))], new != nil)
    case .forget:
      guard form["confirm"] == "yes" else { return Self.redirect("/jobs/\(id)/forget") }
      let done = try await database.run(ConsoleSQL.ForgetJob.self, .init(id: id)).first?.done ?? false
      outcome = (done ? "forgotten" : "forget-refused", [], done)
    }
    logger.info(
      "console action",
      metadata: ["action": "\(action.rawValue)", "job.id": "\(id)", "done": "\(outcome.done)"])
    return answer(outcome.notice, extra: outcome.extra, done: outcome.done, back: back, request)
  }

  private func retryFailed(_ form: Form, _ request: Request) async throws -> Response {
    guard let code = form["error_code"] else { return Self.text(.badRequest, "no error code\n") }
    let retried =
      try await database.run(ConsoleSQL.RetryErrorCode.self, .init(errorCode: code, limit: 10_000))
      .first?.retried ?? 0
    logger.info(
      "console action", metadata: ["action": "retry-failed", "error_code": "\(code)", "jobs": "\(retried)"])
    return answer("retried-all", extra: [("count", String(retried))], done: true, back: "/", request)
  }

  /// The page's script asked (X-Console-Fetch): the notice's text. A form without the script: back to
  /// the page, which shows the notice.
  private func answer(
    _ notice: String, extra: [(String, String?)], done: Bool, back: String, _ request: Request
  ) -> Response {
    let query = Form.query([("notice", notice)] + extra)
    if request.headers[.init("X-Console-Fetch")!] != nil {
      let text = Notice.named(Form(encoded: query))?.text ?? notice
      return Self.text(done ? .ok : .conflict, text)
    }
    return Self.redirect("\(back)?\(query)")
  }

  /// A spec's problems as the database finds them (thumbs.check_profile); a text that is not JSON at all
  /// is said here, before the cast would fail.
  private func problems(in spec: String) async throws -> [String] {
    guard (try? JSONSerialization.jsonObject(with: Data(spec.utf8))) != nil else {
      return ["spec is not JSON"]
    }
    return try await database.run(ConsoleSQL.CheckProfile.self, .init(spec: spec)).map(\.problem)
  }

  /// The profiles page with a draft in its form and the draft's check, answering a POST.
  private func profilesAnswer(
    _ session: Sessions.Session, draft: (name: String, spec: String), problems: [String],
    notice: Notice? = nil,
    status: HTTPResponse.Status = .ok
  ) async throws -> Response {
    let check = ProfilesPage.check(problems: problems, name: draft.name, spec: draft.spec)
    let content = try await profiles(session, draft: draft, check: check)
    return Self.html(
      Layout.page(
        title: content.title, section: content.section, session: session, readOnly: readOnly, notice: notice,
        body: content.body),
      status: status)
  }

  private func checkProfile(
    _ form: Form, _ session: Sessions.Session, _ request: Request
  ) async throws -> Response {
    let draft = (name: form["name"] ?? "draft", spec: form["spec"] ?? "")
    let problems = try await problems(in: draft.spec)
    if request.headers[.init("X-Console-Fetch")!] != nil {
      return Self.html(ProfilesPage.check(problems: problems, name: draft.name, spec: draft.spec))
    }
    return try await profilesAnswer(session, draft: draft, problems: problems)
  }

  private func saveProfile(_ form: Form, _ session: Sessions.Session) async throws -> Response {
    guard let name = form["name"], let spec = form["spec"] else {
      return Self.text(.badRequest, "a profile needs a name and a spec\n")
    }
    let problems = try await problems(in: spec)
    guard problems.isEmpty else {
      return try await profilesAnswer(
        session, draft: (name, spec), problems: problems,
        notice: Notice(kind: .refused, text: "Not saved: the spec has problems."),
        status: .unprocessableContent)
    }
    let version = try await database.run(ConsoleSQL.SaveProfile.self, .init(name: name, spec: spec)).first?
      .version
    logger.info("console action", metadata: ["action": "save-profile", "profile": "\(name)"])
    return Self.redirect(
      "/profiles?" + Form.query([("notice", "profile-saved"), ("version", version.map(String.init))]))
  }

  // MARK: - Live updates

  /// Server-Sent Events: `change` after each burst of queue or event notifications, and a comment every
  /// 5 s, which keeps proxies from closing the stream and finds a page that went away (its write
  /// fails), so that the console stops listening once no page is open.
  private func liveStream() -> Response {
    let feed = self.feed
    let body = ResponseBody { writer in
      // Subscribed once the stream is written, so that a page that left before gets nothing held.
      let changes = feed.subscribe()
      let (messages, out) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingNewest(8))
      try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask {
          for await _ in changes { out.yield("event: change\ndata: \n\n") }
          out.finish()
        }
        group.addTask {
          while !Task.isCancelled {
            try await Task.sleep(for: .seconds(5))
            out.yield(": keep-alive\n\n")
          }
        }
        try await writer.write(ByteBuffer(string: "retry: 3000\n\n"))
        for await message in messages { try await writer.write(ByteBuffer(string: message)) }
        group.cancelAll()
      }
      try await writer.finish(nil)
    }
    return Response(
      status: .ok,
      headers: [
        .contentType: "text/event-stream", .cacheControl: "no-store", .init("X-Accel-Buffering")!: "no",
      ],
      body: body)
  }

  // MARK: - Responses

  static let securityHeaders: [(HTTPField.Name, String)] = [
    (
      .contentSecurityPolicy,
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
        + "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    (.init("X-Content-Type-Options")!, "nosniff"),
    (.init("Referrer-Policy")!, "same-origin"),
    (.cacheControl, "no-store"),
  ]

  static func html(_ page: HTML, status: HTTPResponse.Status = .ok) -> Response {
    var headers: HTTPFields = [.contentType: "text/html; charset=utf-8"]
    for (name, value) in securityHeaders { headers[name] = value }
    return Response(
      status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: page.text)))
  }

  static func text(_ status: HTTPResponse.Status, _ body: String) -> Response {
    Response(
      status: status, headers: [.contentType: "text/plain; charset=utf-8", .cacheControl: "no-store"],
      body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
  }

  static func asset(_ body: String, type: String) -> Response {
    Response(
      status: .ok, headers: [.contentType: type, .cacheControl: "max-age=300"],
      body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
  }

  static func redirect(_ location: String) -> Response {
    Response(status: .seeOther, headers: [.location: location, .cacheControl: "no-store"])
  }

  /// `HttpOnly` and `SameSite=Strict` always; `Secure` when the request came over TLS (through a proxy
  /// that says so in X-Forwarded-Proto).
  static func cookie(_ name: String, _ value: String, _ request: Request, maxAge: Int?) -> String {
    var cookie = "\(name)=\(value); Path=/; HttpOnly; SameSite=Strict"
    if let maxAge { cookie += "; Max-Age=\(maxAge)" }
    if request.headers[.init("X-Forwarded-Proto")!]?.lowercased() == "https" {
      cookie += "; Secure"
    }
    return cookie
  }
}

/// A page about something that is not there (404).
struct Missing: Error {
  var what: String
}

extension Notice {
  /// The notice a redirect's query names: fixed texts, so a link cannot make the page say anything else.
  static func named(_ query: Form) -> Notice? {
    guard let name = query["notice"] else { return nil }
    switch name {
    case "retried": return Notice(kind: .done, text: "Retried: the job is queued again, due now.")
    case "retry-refused":
      return Notice(
        kind: .refused,
        text:
          "Not retried: only a failed or cancelled job can be, and not while its photo has a queued job of the profile."
      )
    case "cancelled": return Notice(kind: .done, text: "Cancelled.")
    case "cancel-refused":
      return Notice(kind: .refused, text: "Not cancelled: only a queued or running job can be.")
    case "rerendered":
      return Notice(
        kind: .done,
        text: "Re-render queued as job \(query["job"].flatMap { Int64($0) }.map(String.init) ?? "?").")
    case "rerender-refused":
      return Notice(kind: .refused, text: "Not queued: the job's source is gone (forgotten).")
    case "forgotten":
      return Notice(
        kind: .done, text: "Forgotten: the photo's jobs are scrubbed and its thumbnails will be deleted.")
    case "forget-refused":
      return Notice(kind: .refused, text: "Not forgotten: the job is gone or already forgotten.")
    case "retried-all":
      let count = query["count"].flatMap { Int64($0) } ?? 0
      return Notice(kind: .done, text: "Retried \(count) failed jobs.")
    case "profile-saved":
      return Notice(
        kind: .done,
        text: "Saved as version \(query["version"].flatMap { Int64($0) }.map(String.init) ?? "?").")
    default: return nil
    }
  }
}
