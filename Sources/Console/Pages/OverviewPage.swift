/// `/`: the queue now, the last hour, who holds the backlog, the workers and the webhooks. Every part is
/// a live region.
struct OverviewPage {
  var queue: ConsoleSQL.OverviewQueue.Row
  var minutes: [ConsoleSQL.OverviewMinutes.Row]
  var failures: [ConsoleSQL.OverviewFailures.Row]
  var owners: [ConsoleSQL.OverviewOwners.Row]
  var workers: [ConsoleSQL.Workers.Row]
  var webhooks: [ConsoleSQL.OverviewWebhooks.Row]
  var session: Sessions.Session
  var readOnly: Bool

  var body: HTML {
    let hour = minutes.reduce(into: (succeeded: Int64(0), failed: Int64(0), cancelled: Int64(0))) {
      $0.succeeded += $1.succeeded
      $0.failed += $1.failed
      $0.cancelled += $1.cancelled
    }
    let cards: [(String, String, String)] = [
      ("queued", Show.count(queue.queued), "/jobs?state=queued"),
      ("ready now", Show.count(queue.ready), "/jobs?state=queued"),
      ("running", Show.count(queue.running), "/jobs?state=running"),
      ("oldest ready job waited", queue.ready > 0 ? Show.seconds(queue.oldestReadySeconds) : "–", ""),
      ("succeeded, last hour", Show.count(hour.succeeded), "/jobs?state=succeeded"),
      ("failed, last hour", Show.count(hour.failed), "/jobs?state=failed"),
    ]
    let cardHTML = HTML.join(
      cards.map { label, value, link -> HTML in
        let number: HTML = link.isEmpty ? "\(value)" : "<a href=\"\(link)\">\(value)</a>"
        return
          "<div class=\"card\" data-card=\"\(label)\"><div class=\"value\">\(number)</div><div class=\"label\">\(label)</div></div>"
      })
    return """
      <h1>Overview</h1>
      <section id="queue" data-live><div class="cards">\(cardHTML)</div></section>
      <div class="grid">
      <section class="panel" id="throughput" data-live><h2>Finished per minute, last hour</h2>\
      \(Charts.minutes(minutes))</section>
      <section class="panel" id="failures" data-live><h2>Failures by error code, last hour</h2>\
      \(Charts.failures(failures))\(retryAll)</section>
      </div>
      <section id="owners" data-live><h2>Largest backlogs</h2>\(ownersTable)</section>
      <section id="workers" data-live><h2>Workers</h2>\(WorkersPage.table(workers))</section>
      <section id="webhooks" data-live><h2>Webhooks</h2>\(webhooksTable)</section>
      """
  }

  /// A Retry-all button per error code that failed in the last hour.
  var retryAll: HTML {
    guard !readOnly, !failures.isEmpty else { return "" }
    let buttons = failures.map { row in
      Layout.actionButton(
        "Retry all \(row.errorCode)", action: "/retry-failed", session: session,
        fields: [("error_code", row.errorCode)])
    }
    return "<div class=\"actions\">\(buttons)</div>"
  }

  var ownersTable: HTML {
    guard !owners.isEmpty else { return "<p class=\"muted\">No live jobs.</p>" }
    let rows = owners.map { owner -> HTML in
      let name: HTML =
        owner.owner.map { "<a href=\"/jobs?owner=\(Form.encode($0))&amp;state=queued\">\($0)</a>" }
        ?? "<span class=\"muted\">(no owner)</span>"
      return """
        <tr><td>\(name)</td><td class="num">\(Show.count(owner.queued))</td><td class="num">\(Show.count(owner.due))</td>\
        <td class="num">\(Show.count(owner.running))</td><td class="num">\(Show.seconds(owner.oldestQueuedSeconds))</td></tr>
        """
    }
    return """
      <table><thead><tr><th>owner</th><th class="num">queued</th><th class="num">due</th>\
      <th class="num">running</th><th class="num">oldest queued</th></tr></thead><tbody>\(rows)</tbody></table>
      """
  }

  var webhooksTable: HTML {
    guard !webhooks.isEmpty else { return "<p class=\"muted\">No webhook endpoint registered.</p>" }
    let rows = webhooks.map { hook -> HTML in
      let status: HTML =
        hook.disabledReason.map { "<span class=\"bad\">off: \($0)</span>" } ?? "on"
      let error: HTML =
        hook.lastError.map { error in
          "<span class=\"bad\">\(hook.lastStatus.map { "HTTP \($0): " } ?? "")\(error)</span>"
        } ?? ""
      return """
        <tr><td class="mono">\(hook.url)</td><td>\(status)</td><td class="num">\(Show.count(hook.pending))</td>\
        <td class="num">\(Show.count(hook.due))</td><td class="num">\(Show.seconds(hook.oldestPendingSeconds))</td>\
        <td>\(error)</td></tr>
        """
    }
    return """
      <table><thead><tr><th>endpoint</th><th>state</th><th class="num">pending</th><th class="num">due</th>\
      <th class="num">oldest pending</th><th>last error</th></tr></thead><tbody>\(rows)</tbody></table>
      """
  }
}
