import Foundation
import ThumbCore

/// `/jobs/{id}`: everything about one job on one page, its state and error kept current live.
struct JobPage {
  var job: ConsoleSQL.Job.Row
  var variants: [ConsoleSQL.JobVariants.Row]
  var original: ConsoleSQL.JobOriginal.Row?
  var events: [ConsoleSQL.JobEvents.Row]
  var history: [ConsoleSQL.JobHistory.Row]
  var session: Sessions.Session
  var readOnly: Bool

  var body: HTML {
    """
    <h1>Job \(job.id)</h1>
    <section id="job-state" data-live>\(summary)\(actions)</section>
    <h2>Thumbnails</h2><section id="job-variants" data-live>\(variantFigures)</section>
    <div class="grid">
    <section id="job-facts" data-live><h2>The job</h2>\(facts)</section>
    <section id="job-original" data-live><h2>The original</h2>\(originalFacts)</section>
    </div>
    <section id="job-attempts" data-live><h2>Attempts</h2>\(attempts)\(timings)</section>
    <section id="job-events" data-live><h2>Events and webhook deliveries</h2>\(eventsTable)</section>
    <section id="job-history" data-live><h2>The photo's other jobs</h2>\(historyTable)</section>
    """
  }

  var summary: HTML {
    let error: HTML =
      job.errorCode.map { code in
        "<span class=\"bad\" data-field=\"error_code\">\(code)</span>"
      } ?? "<span class=\"muted\" data-field=\"error_code\"></span>"
    let message: HTML = job.lastError.map { "<pre class=\"bad\">\($0)</pre>" } ?? ""
    return """
      <dl class="facts"><dt>state</dt><dd><span class="state state-\(job.state)" data-field="state">\(job.state)</span></dd>\
      <dt>error code</dt><dd>\(error)</dd>\
      <dt>attempts</dt><dd>\(job.attempts) of \(job.maxAttempts)</dd></dl>\(message)
      """
  }

  /// All four buttons on every job, those that do not apply to its state disabled, so an operator
  /// always finds them in the same place.
  var actions: HTML {
    guard !readOnly else { return "" }
    let live = job.state == "queued" || job.state == "running"
    let buttons: [HTML] = [
      action("Retry", "retry", enabled: job.state == "failed" || job.state == "cancelled"),
      action("Cancel", "cancel", enabled: live),
      // A photo with a live job would get that job back from thumbs.enqueue: only a finished one's.
      action("Re-render", "rerender", enabled: job.sourceURL != nil && !live),
      // Forget asks first, on a page that names what goes (a GET): it works without JavaScript.
      """
      <form method="get" action="/jobs/\(job.id)/forget" class="action">\
      <button type="submit" class="danger"\(job.state == "forgotten" ? " disabled" : "")>Forget</button></form>
      """,
    ]
    return "<div class=\"actions\">\(buttons)</div>"
  }

  private func action(_ label: String, _ name: String, enabled: Bool) -> HTML {
    Layout.actionButton(
      label, action: "/jobs/\(job.id)/\(name)", session: session, inPlace: true, enabled: enabled)
  }

  var variantFigures: HTML {
    guard !variants.isEmpty else {
      return job.state == "succeeded"
        ? "<p class=\"muted\">This job made no thumbnails.</p>"
        : "<p class=\"muted\">None: the job has not succeeded.</p>"
    }
    let figures = variants.map { variant -> HTML in
      """
      <figure><img src="/jobs/\(job.id)/variants/\(Form.encode(variant.name))" alt="\(variant.name)" \
      width="\(variant.width)" height="\(variant.height)" loading="eager">\
      <figcaption><b>\(variant.name)</b> · \(variant.width)×\(variant.height) \(variant.format) · \
      \(Show.bytes(variant.bytes))<br><span class="mono">\(variant.storageKey)</span></figcaption></figure>
      """
    }
    return "<div class=\"variants\">\(figures)</div>"
  }

  var facts: HTML {
    var rows: [(String, HTML)] = [
      ("profile", "<a href=\"/jobs?profile=\(Form.encode(job.profile))\">\(job.profile)</a>"),
      ("priority", "\(job.priority)"),
      ("owner", job.owner.map { "<a href=\"/jobs?owner=\(Form.encode($0))\">\($0)</a>" } ?? "–"),
      ("external id", job.externalID.map { "<span class=\"mono\">\($0)</span>" } ?? "–"),
      ("source", job.sourceURL.map { "<span class=\"mono\">\($0)</span>" } ?? "–"),
      ("created", "\(job.created)"), ("due", "\(job.runAt)"), ("started", "\(job.started ?? "–")"),
      ("finished", "\(job.finished ?? "–")"),
    ]
    if let worker = job.leasedBy { rows.append(("worker", "<span class=\"mono\">\(worker)</span>")) }
    if let left = job.leaseSecondsLeft, job.state == "running" {
      rows.append(("lease ends in", "\(Show.seconds(max(0, left)))"))
    }
    if job.rerender {
      rows.append(("re-render", "yes, of profile version \(job.specVersion.map(String.init) ?? "?")"))
    }
    if let reused = job.reusedFrom {
      rows.append(
        ("thumbnails", "taken from <a href=\"/jobs/\(reused)\">job \(reused)</a> (same original and spec)"))
    }
    if let hash = job.thumbhash { rows.append(("ThumbHash", thumbhash(hash))) }
    rows.append(("metadata", "<pre data-field=\"metadata\">\(Self.pretty(job.metadata))</pre>"))
    if let warnings = Self.array(job.warnings), !warnings.isEmpty {
      rows.append(("warnings", "<pre>\(Self.pretty(job.warnings))</pre>"))
    }
    return "<dl class=\"facts\">\(rows.map { "<dt>\($0.0)</dt><dd>\($0.1)</dd>" as HTML })</dl>"
  }

  /// The ThumbHash drawn as the app would draw its placeholder (decoded here, a small grid of cells
  /// blurred by the SVG), at the aspect of the largest thumbnail, and the hash itself.
  func thumbhash(_ hash: String) -> HTML {
    let aspect = variants.first.map { Double($0.height) / Double(max(1, $0.width)) } ?? 0.75
    let (w, h) =
      aspect <= 1 ? (32, max(1, Int((32 * aspect).rounded()))) : (max(1, Int((32 / aspect).rounded())), 32)
    guard let bytes = Data(base64Encoded: hash),
      let rgba = ThumbHash.decode(Array(bytes), width: w, height: h)
    else {
      return "<span class=\"mono\">\(hash)</span>"
    }
    var cells: [HTML] = []
    cells.reserveCapacity(w * h)
    for y in 0..<h {
      for x in 0..<w {
        let i = (x + y * w) * 4
        let color = String(format: "#%02x%02x%02x", rgba[i], rgba[i + 1], rgba[i + 2])
        cells.append(
          "<rect x=\"\(x)\" y=\"\(y)\" width=\"1.05\" height=\"1.05\" fill=\"\(color)\" fill-opacity=\"\(String(format: "%.2f", Double(rgba[i + 3]) / 255))\"/>"
        )
      }
    }
    return """
      <svg class="thumbhash" viewBox="0 0 \(w) \(h)" width="\(w * 4)" height="\(h * 4)" role="img" \
      aria-label="ThumbHash placeholder" data-thumbhash="\(hash)"><defs><filter id="soft"><feGaussianBlur stdDeviation="0.5"/></filter></defs>\
      <g filter="url(#soft)">\(cells)</g></svg><br><span class="mono">\(hash)</span>
      """
  }

  var originalFacts: HTML {
    var rows: [(String, HTML)] = []
    if let original {
      rows.append(("format", "\(original.format ?? original.contentType ?? "–")"))
      if let width = original.width, let height = original.height {
        rows.append(("size", "\(width)×\(height)"))
      }
      rows.append(("bytes", "\(Show.bytes(original.bytes))"))
      if let read = original.bytesRead { rows.append(("bytes read", "\(Show.bytes(read)) (by ranges)")) }
      rows.append(("downloads", "\(original.downloads) (revalidated \(original.revalidations))"))
      rows.append(("fetched", "\(original.fetched) by \(original.fetchedBy ?? "–")"))
      if let sha = original.sha256 { rows.append(("SHA-256", "<span class=\"mono\">\(sha)</span>")) }
    }
    if let media = job.media { rows.append(("media", "<pre>\(Self.pretty(media))</pre>")) }
    guard !rows.isEmpty else { return "<p class=\"muted\">Not downloaded yet, or no longer recorded.</p>" }
    return "<dl class=\"facts\">\(rows.map { "<dt>\($0.0)</dt><dd>\($0.1)</dd>" as HTML })</dl>"
  }

  var attempts: HTML {
    guard let log = Self.array(job.attemptLog), !log.isEmpty else {
      return "<p class=\"muted\">No failed attempt.</p>"
    }
    let rows = log.compactMap { $0 as? [String: Any] }.map { entry -> HTML in
      func text(_ key: String) -> String { (entry[key]).map { "\($0)" } ?? "" }
      return """
        <tr><td class="num">\(text("attempt"))</td><td class="mono">\(text("worker"))</td><td>\(text("started_at"))</td>\
        <td>\(text("ended_at"))</td><td>\(text("outcome"))</td><td class="bad">\(text("error_code"))</td>\
        <td>\(text("error"))</td></tr>
        """
    }
    return """
      <table><thead><tr><th class="num">#</th><th>worker</th><th>started</th><th>ended</th><th>outcome</th>\
      <th>error code</th><th>error</th></tr></thead><tbody>\(rows)</tbody></table>
      """
  }

  /// Where the successful attempt's time went, stage by stage.
  var timings: HTML {
    guard let stages = job.stageMS.flatMap(Self.object), !stages.isEmpty else { return "" }
    let order = ["fetch", "decode", "resize", "encode", "store"]
    let names = order.filter { stages[$0] != nil } + stages.keys.filter { !order.contains($0) }.sorted()
    let cells = names.map { name -> HTML in
      "<tr><td>\(name)</td><td class=\"num\">\(stages[name].map { "\($0)" } ?? "") ms</td></tr>"
    }
    return "<h2>Where the time went</h2><table><tbody>\(cells)</tbody></table>"
  }

  var eventsTable: HTML {
    guard !events.isEmpty else { return "<p class=\"muted\">No event yet.</p>" }
    let rows = events.map { event -> HTML in
      let deliveries = (Self.array(event.deliveries) ?? []).compactMap { $0 as? [String: Any] }.map {
        delivery -> HTML in
        func text(_ key: String) -> String {
          guard let value = delivery[key], !(value is NSNull) else { return "" }
          return "\(value)"
        }
        let status = text("last_status").isEmpty ? "" : "HTTP \(text("last_status"))"
        return """
          <div><span class="mono">\(text("endpoint"))</span>: \(text("state")), \(text("attempts")) attempts \
          \(status) <span class="bad">\(text("last_error"))</span></div>
          """
      }
      return """
        <tr><td class="num">\(event.id)</td><td>\(event.kind)</td><td>\(event.created)</td>\
        <td class="bad">\(event.errorCode)</td><td>\(deliveries)</td></tr>
        """
    }
    return """
      <table><thead><tr><th class="num">event</th><th>kind</th><th>at (UTC)</th><th>error code</th>\
      <th>webhook deliveries</th></tr></thead><tbody>\(rows)</tbody></table>
      """
  }

  var historyTable: HTML {
    guard !history.isEmpty else { return "<p class=\"muted\">None.</p>" }
    let rows = history.map { other -> HTML in
      """
      <tr><td class="num"><a href="/jobs/\(other.id)">\(other.id)</a></td><td>\(Show.stateBadge(other.state))</td>\
      <td>\(other.profile)</td><td class="bad">\(other.errorCode)</td><td>\(other.rerender ? "re-render" : "")</td>\
      <td>\(other.created)</td></tr>
      """
    }
    return """
      <table><thead><tr><th class="num">job</th><th>state</th><th>profile</th><th>error code</th><th></th>\
      <th>created (UTC)</th></tr></thead><tbody>\(rows)</tbody></table>
      """
  }

  /// The confirmation of Forget, naming what goes.
  static func forgetConfirmation(
    job: ConsoleSQL.Job.Row, preview: [ConsoleSQL.ForgetPreview.Row], session: Sessions.Session
  ) -> HTML {
    let who: HTML =
      job.externalID.map { "the photo with external id <b class=\"mono\">\($0)</b>" }
      ?? "the photo at <b class=\"mono\">\(job.sourceURL ?? "?")</b>"
    let items = preview.map { row -> HTML in
      "<li>profile <b>\(row.profile)</b>: \(row.variants) current thumbnails and \(row.jobs) jobs</li>"
    }
    let list: HTML =
      items.isEmpty ? "<p>It has no current thumbnails; its jobs are scrubbed.</p>" : "<ul>\(items)</ul>"
    return """
      <h1>Forget job \(job.id)'s photo?</h1>
      <p>This forgets \(who), every profile and every job of it: its source URL and metadata are erased \
      from the jobs, its current thumbnails stop being served and their objects are deleted from storage \
      once collection's grace has passed.</p>
      \(list)
      <div class="actions">\(Layout.actionButton("Forget", action: "/jobs/\(job.id)/forget", session: session, fields: [("confirm", "yes")], danger: true))\
      <a href="/jobs/\(job.id)">Keep it</a></div>
      """
  }

  static func pretty(_ json: String) -> String {
    guard let data = json.data(using: .utf8),
      let value = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]),
      let out = try? JSONSerialization.data(
        withJSONObject: value,
        options: [.prettyPrinted, .sortedKeys, .fragmentsAllowed, .withoutEscapingSlashes])
    else { return json }
    return String(decoding: out, as: UTF8.self)
  }

  static func array(_ json: String) -> [Any]? {
    json.data(using: .utf8).flatMap { try? JSONSerialization.jsonObject(with: $0) as? [Any] }
  }

  static func object(_ json: String) -> [String: Any]? {
    json.data(using: .utf8).flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }
  }
}
