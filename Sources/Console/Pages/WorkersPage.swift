/// `/workers`: the registered workers. Ready means running with a heartbeat younger than its lease.
enum WorkersPage {
  static func body(_ workers: [ConsoleSQL.Workers.Row]) -> HTML {
    "<h1>Workers</h1><section id=\"workers\" data-live>\(table(workers))</section>"
  }

  static func table(_ workers: [ConsoleSQL.Workers.Row]) -> HTML {
    guard !workers.isEmpty else { return "<p class=\"muted\">No worker is registered.</p>" }
    let rows = workers.map { worker -> HTML in
      let ready: HTML =
        worker.stale
        ? "<span class=\"bad\">stale</span>"
        : worker.state == "running" ? "ready" : "\(worker.state)"
      return """
        <tr><td class="mono">\(worker.id)</td><td>\(worker.host)</td><td>\(worker.version)</td>\
        <td class="num">\(worker.running)/\(worker.concurrency)</td><td class="num">\(Show.bytes(worker.memoryBudget))</td>\
        <td class="num">\(Show.count(worker.jobsSucceeded))</td><td class="num">\(Show.count(worker.jobsFailed))</td>\
        <td class="num">\(Show.seconds(worker.heartbeatSeconds)) ago</td><td>\(ready)</td></tr>
        """
    }
    return """
      <table><thead><tr><th>worker</th><th>host</th><th>version</th><th class="num">slots in use</th>\
      <th class="num">memory budget</th><th class="num">succeeded</th><th class="num">failed</th>\
      <th class="num">last heartbeat</th><th>ready</th></tr></thead><tbody>\(rows)</tbody></table>
      """
  }
}
