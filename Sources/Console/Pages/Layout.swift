import Foundation

/// The frame of every page: the navigation, the page's own content, the stylesheet and the script
/// (both served by the console itself, nothing fetched from elsewhere).
enum Layout {
  enum Section: String, CaseIterable {
    case overview = "Overview"
    case jobs = "Jobs"
    case workers = "Workers"
    case profiles = "Profiles"

    var path: String {
      switch self {
      case .overview: return "/"
      case .jobs: return "/jobs"
      case .workers: return "/workers"
      case .profiles: return "/profiles"
      }
    }
  }

  static func page(
    title: String, section: Section?, session: Sessions.Session?, readOnly: Bool, notice: Notice? = nil,
    body: HTML
  ) -> HTML {
    let nav = HTML.join(
      Section.allCases.map { item in
        item == section
          ? "<a href=\"\(item.path)\" aria-current=\"page\">\(item.rawValue)</a>"
          : "<a href=\"\(item.path)\">\(item.rawValue)</a>"
      })
    let logout: HTML =
      session.map { session in
        """
        <form method="post" action="/logout" class="logout">\(csrfField(session))\
        <button type="submit">Log out</button></form>
        """
      } ?? ""
    let mode: HTML = readOnly ? "<span class=\"badge\">read-only</span>" : ""
    let flash: HTML =
      notice.map { notice in "<p class=\"notice \(notice.kind.rawValue)\" role=\"status\">\(notice.text)</p>"
      }
      ?? ""
    return """
      <!doctype html>
      <html lang="en">
      <head>
      <meta charset="utf-8">
      <meta name="viewport" content="width=device-width, initial-scale=1">
      <title>\(title) · thumbd</title>
      <link rel="stylesheet" href="/static/console.css">
      <script src="/static/console.js" defer></script>
      </head>
      <body>
      <header><span class="brand">thumbd</span>\(mode)<nav>\(nav)</nav>\(logout)</header>
      <main>
      \(flash)\(body)
      </main>
      </body>
      </html>

      """
  }

  static func csrfField(_ session: Sessions.Session) -> HTML {
    "<input type=\"hidden\" name=\"csrf\" value=\"\(session.csrf)\">"
  }

  /// A button that POSTs `action` with the session's token: works without JavaScript. `inPlace`: the
  /// page's script sends it without leaving the page (which then updates live).
  static func actionButton(
    _ label: String, action: String, session: Sessions.Session, fields: [(String, String)] = [],
    danger: Bool = false, inPlace: Bool = false, enabled: Bool = true
  ) -> HTML {
    let hidden = HTML.join(
      fields.map { name, value in "<input type=\"hidden\" name=\"\(name)\" value=\"\(value)\">" })
    let kind: HTML = danger ? " class=\"danger\"" : ""
    let script: HTML = inPlace ? " data-inplace" : ""
    let disabled: HTML = enabled ? "" : " disabled"
    return """
      <form method="post" action="\(action)" class="action"\(script)>\(csrfField(session))\(hidden)\
      <button type="submit"\(kind)\(disabled)>\(label)</button></form>
      """
  }
}

/// A line at the top of the page saying what an action did.
struct Notice: Sendable, Equatable {
  enum Kind: String, Sendable { case done, refused }
  var kind: Kind
  var text: String
}

/// Small formatting helpers shared by the pages.
enum Show {
  static func seconds(_ value: Double?) -> String {
    guard let value else { return "–" }
    if value < 1 { return "\(Int((value * 1000).rounded())) ms" }
    if value < 120 { return "\(Int(value.rounded())) s" }
    if value < 7200 { return "\(Int((value / 60).rounded())) min" }
    if value < 172_800 { return "\(Int((value / 3600).rounded())) h" }
    return "\(Int((value / 86400).rounded())) d"
  }

  static func bytes(_ value: Int64?) -> String {
    guard let value else { return "–" }
    let units = ["B", "KiB", "MiB", "GiB", "TiB"]
    var amount = Double(value)
    var unit = 0
    while amount >= 1024, unit < units.count - 1 {
      amount /= 1024
      unit += 1
    }
    return unit == 0 ? "\(value) B" : String(format: "%.1f %@", amount, units[unit])
  }

  static func count(_ value: Int64) -> String {
    let digits = String(value)
    var out = ""
    for (index, character) in digits.reversed().enumerated() {
      if index > 0, index % 3 == 0, character != "-" { out.append(",") }
      out.append(character)
    }
    return String(out.reversed())
  }

  static func stateBadge(_ state: String) -> HTML {
    "<span class=\"state state-\(state)\">\(state)</span>"
  }
}
