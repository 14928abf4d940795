/// Charts drawn on the server as SVG: no chart library, nothing for the browser to compute.
enum Charts {
  /// One bar per minute of the last hour, oldest on the left, succeeded stacked under failed.
  static func minutes(_ rows: [ConsoleSQL.OverviewMinutes.Row]) -> HTML {
    var succeeded = [Int64](repeating: 0, count: 60)
    var failed = [Int64](repeating: 0, count: 60)
    for row in rows where (0..<60).contains(row.minuteAgo) {
      succeeded[59 - row.minuteAgo] = row.succeeded
      failed[59 - row.minuteAgo] = row.failed + row.cancelled
    }
    let most = max(1, zip(succeeded, failed).map { $0 + $1 }.max() ?? 1)
    let (width, height, bar) = (600, 120, 10)
    var bars: [HTML] = []
    for minute in 0..<60 {
      let x = minute * bar
      let ok = Int((Double(succeeded[minute]) / Double(most) * Double(height)).rounded())
      let bad = Int((Double(failed[minute]) / Double(most) * Double(height)).rounded())
      let title =
        "\(59 - minute) min ago: \(succeeded[minute]) succeeded, \(failed[minute]) failed or cancelled"
      bars.append(
        """
        <g><title>\(title)</title>\
        <rect x="\(x)" y="\(height - ok)" width="\(bar - 1)" height="\(ok)" fill="#4caf50"/>\
        <rect x="\(x)" y="\(height - ok - bad)" width="\(bar - 1)" height="\(bad)" fill="#d63638"/></g>
        """)
    }
    return """
      <svg role="img" aria-label="jobs finished per minute, last hour" viewBox="0 0 \(width) \(height + 16)" \
      width="100%" preserveAspectRatio="none">\(bars)\
      <text x="0" y="\(height + 13)">60 min ago</text><text x="\(width - 30)" y="\(height + 13)">now</text>\
      <text x="\(width - 120)" y="10">peak \(most)/min</text></svg>
      """
  }

  /// Horizontal bars, one per error code, the longest for the most frequent; each links to its jobs.
  static func failures(_ rows: [ConsoleSQL.OverviewFailures.Row]) -> HTML {
    guard let most = rows.map(\.jobs).max(), most > 0 else {
      return "<p class=\"muted\">No job failed for good in the last hour.</p>"
    }
    let rowHeight = 20
    let bars = rows.enumerated().map { index, row -> HTML in
      let y = index * rowHeight
      let length = max(2, Int(Double(row.jobs) / Double(most) * 300))
      return """
        <a href="/jobs?state=failed&amp;error_code=\(Form.encode(row.errorCode))"><g>\
        <text x="0" y="\(y + 14)">\(row.errorCode)</text>\
        <rect x="190" y="\(y + 3)" width="\(length)" height="14" fill="#d63638"/>\
        <text x="\(196 + length)" y="\(y + 14)">\(row.jobs)</text></g></a>
        """
    }
    return """
      <svg role="img" aria-label="failures by error code, last hour" viewBox="0 0 560 \(rows.count * rowHeight)" \
      width="100%">\(bars)</svg>
      """
  }
}
