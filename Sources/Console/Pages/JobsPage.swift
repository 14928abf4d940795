/// `/jobs`: the newest jobs matching the filters, a page at a time, and a link to the next (older)
/// page: a keyset, not an offset.
struct JobFilter: Sendable, Equatable {
  static let states = ["queued", "running", "succeeded", "failed", "cancelled", "forgotten"]
  static let pageSize: Int64 = 50
  /// How many ids a page without an indexed filter reads at most: its cost is bounded whatever the
  /// table holds or the filters match (a walk of the primary key, tens of milliseconds).
  static let window: Int64 = 100_000

  var state: String?
  var errorCode: String?
  var profile: String?
  var owner: String?
  var externalID: String?
  var source: String?
  /// When the job reached its final state, as `YYYY-MM-DDTHH:MM` (an HTML datetime-local field), UTC.
  var finishedAfter: String?
  var finishedBefore: String?
  /// The keyset: jobs older than this id.
  var before: Int64?

  init(query: Form) {
    state = query["state"].flatMap { Self.states.contains($0) ? $0 : nil }
    errorCode = query["error_code"]
    profile = query["profile"]
    owner = query["owner"]
    externalID = query["external_id"]
    source = query["source"]
    finishedAfter = query["finished_after"].flatMap(Self.timestamp)
    finishedBefore = query["finished_before"].flatMap(Self.timestamp)
    before = query["before"].flatMap { Int64($0) }
  }

  /// Whether a filter with an index of its own is set: then the page reads only its matches, and needs
  /// no window.
  var hasIndexedFilter: Bool { errorCode != nil || owner != nil || externalID != nil || source != nil }

  /// The lowest id this page reads, below the keyset (or the newest job): nil with an indexed filter.
  func floor(newest: Int64?) -> Int64? {
    guard !hasIndexedFilter else { return nil }
    let top = before ?? ((newest ?? 0) + 1)
    return max(1, top - Self.window)
  }

  func parameters(floor: Int64?) -> ConsoleSQL.JobsPage.Parameters {
    .init(
      state: state, errorCode: errorCode, profile: profile, owner: owner, externalID: externalID,
      source: source, finishedAfter: finishedAfter.map { $0 + "+00" },
      finishedBefore: finishedBefore.map { $0 + "+00" }, before: before, floor: floor, limit: Self.pageSize)
  }

  /// The query string of these filters, with another keyset.
  func query(before: Int64?) -> String {
    Form.query([
      ("state", state), ("error_code", errorCode), ("profile", profile), ("owner", owner),
      ("external_id", externalID), ("source", source), ("finished_after", finishedAfter),
      ("finished_before", finishedBefore), ("before", before.map(String.init)),
    ])
  }

  /// A datetime-local value (`2026-11-29T16:05`, seconds optional) as PostgreSQL reads it; nil if it
  /// is anything else, or not a time that exists (so that a bad value is no filter rather than an
  /// error from the database).
  static func timestamp(_ text: String) -> String? {
    let parts = text.split(whereSeparator: { "-T:".contains($0) }).map { Int($0) }
    guard (16...19).contains(text.count), text.count == 16 ? parts.count == 5 : parts.count == 6,
      parts.allSatisfy({ $0 != nil }), text.allSatisfy({ $0.isNumber || "-T:".contains($0) })
    else { return nil }
    let numbers = parts.compactMap { $0 }
    let ranges = [1...9999, 1...12, 1...31, 0...23, 0...59, 0...59]
    guard zip(numbers, ranges).allSatisfy({ $1.contains($0) }) else { return nil }
    return text.replacingOccurrences(of: "T", with: " ")
  }
}

enum JobsPage {
  static func body(
    filter: JobFilter, floor: Int64?, rows: [ConsoleSQL.JobsPage.Row], session: Sessions.Session,
    readOnly: Bool
  ) -> HTML {
    let stateOptions = HTML.join(
      ([""] + JobFilter.states).map { state -> HTML in
        let selected: HTML = state == (filter.state ?? "") ? " selected" : ""
        return "<option value=\"\(state)\"\(selected)>\(state.isEmpty ? "any" : state)</option>"
      })
    func field(_ name: String, _ label: String, _ value: String?, type: String = "text") -> HTML {
      "<label>\(label)<input type=\"\(type)\" name=\"\(name)\" value=\"\(value)\"></label>"
    }
    let after = filter.finishedAfter?.replacingOccurrences(of: " ", with: "T")
    let before = filter.finishedBefore?.replacingOccurrences(of: " ", with: "T")
    let form: HTML = """
      <form method="get" action="/jobs" class="filters">\
      <label>state<select name="state">\(stateOptions)</select></label>\
      \(field("error_code", "error code", filter.errorCode))\(field("profile", "profile", filter.profile))\
      \(field("owner", "owner", filter.owner))\(field("external_id", "external id", filter.externalID))\
      \(field("source", "source URL starts with", filter.source))\
      \(field("finished_after", "finished after (UTC)", after, type: "datetime-local"))\
      \(field("finished_before", "finished before (UTC)", before, type: "datetime-local"))\
      <button type="submit">Filter</button> <a href="/jobs">clear</a></form>
      """
    let table: HTML
    if rows.isEmpty {
      table =
        floor.map { "<p class=\"muted\">No job with an id from \($0) on matches.</p>" }
        ?? "<p class=\"muted\">No job matches.</p>"
    } else {
      let lines = rows.map { job -> HTML in
        let error: HTML = job.errorCode.map { "<span class=\"bad\">\($0)</span>" } ?? ""
        let rerender: HTML = job.rerender ? " <span class=\"muted\">re-render</span>" : ""
        return """
          <tr data-job="\(job.id)"><td class="num"><a href="/jobs/\(job.id)">\(job.id)</a></td>\
          <td>\(Show.stateBadge(job.state))\(rerender)</td><td>\(job.profile)</td><td>\(job.owner)</td>\
          <td class="mono">\(job.externalID)</td><td class="mono">\(job.sourceURL.map(shorten))</td><td>\(error)</td>\
          <td class="num">\(job.attempts)/\(job.maxAttempts)</td><td>\(job.created)</td><td>\(job.finished)</td></tr>
          """
      }
      table = """
        <table><thead><tr><th class="num">id</th><th>state</th><th>profile</th><th>owner</th>\
        <th>external id</th><th>source</th><th>error</th><th class="num">attempts</th><th>created (UTC)</th>\
        <th>finished (UTC)</th></tr></thead><tbody>\(lines)</tbody></table>
        """
    }
    let newer: HTML =
      filter.before == nil ? "" : "<a href=\"/jobs?\(filter.query(before: nil))\">newest</a> · "
    let older: HTML
    if Int64(rows.count) == JobFilter.pageSize {
      older = "<a rel=\"next\" href=\"/jobs?\(filter.query(before: rows.last?.id))\">older →</a>"
    } else if let floor, floor > 1 {
      // The window ended before a page was full: the next one starts below it.
      older = """
        <span class="muted">Searched the jobs from id \(floor) on.</span> \
        <a rel="next" href="/jobs?\(filter.query(before: floor))">search older jobs →</a>
        """
    } else {
      older = ""
    }
    // Filtered to one error code: its failed jobs can all be retried at once.
    let retryAll: HTML =
      filter.errorCode.map { code in
        readOnly
          ? ""
          : Layout.actionButton(
            "Retry every failed \(code) job", action: "/retry-failed", session: session,
            fields: [("error_code", code)])
      } ?? ""
    return """
      <h1>Jobs</h1>\(form)\(retryAll)
      <section id="jobs" data-live>\(table)</section>
      <p class="pager">\(newer)\(older)</p>
      """
  }

  /// A long URL cut in the middle for the table (the job's page shows it whole).
  static func shorten(_ url: String) -> String {
    guard url.count > 80 else { return url }
    return String(url.prefix(56)) + "…" + String(url.suffix(20))
  }
}
