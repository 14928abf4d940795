import Foundation
import ThumbCore

/// `/profiles`: the saved specs, and a form that checks a spec as it is typed (thumbs.check_profile)
/// and shows the sizes its variants would have for a 12-megapixel phone photo before it is saved.
enum ProfilesPage {
  /// A 4032x3024 photo: what most phones take.
  static let samplePhoto = PixelSize(width: 4032, height: 3024)

  static func body(
    profiles: [ConsoleSQL.Profiles.Row], draft: (name: String, spec: String)?, check: HTML,
    session: Sessions.Session, readOnly: Bool
  ) -> HTML {
    let saved = profiles.map { profile -> HTML in
      """
      <section class="panel"><h2>\(profile.name) <span class="muted">version \(profile.version), \
      \(profile.updated) UTC</span></h2><pre>\(profile.spec)</pre>\
      \(sizes(name: profile.name, spec: profile.spec))</section>
      """
    }
    // The check's place, filled as the spec is typed (the script) or by the Check button.
    let check: HTML = check.text.isEmpty ? "<div id=\"check\"></div>" : check
    let name = draft?.name ?? profiles.first?.name ?? "default"
    let spec = draft?.spec ?? profiles.first(where: { $0.name == name })?.spec ?? "{\"variants\": []}"
    let form: HTML =
      readOnly
      ? ""
      : """
      <h2>Check or save a spec</h2>
      <form method="post" action="/profiles" class="panel">\(Layout.csrfField(session))\
      <label>name <input type="text" name="name" value="\(name)" required></label>\
      <textarea id="spec" name="spec" spellcheck="false">\(spec)</textarea>\
      <div class="actions"><button type="submit" formaction="/profiles/check">Check</button>\
      <button type="submit">Save</button></div>\(check)</form>
      """
    return "<h1>Profiles</h1>\(form)<div class=\"grid\">\(saved)</div>"
  }

  /// The check's verdict: the problems, or the sizes of the variants for the sample photo.
  static func check(problems: [String], name: String, spec: String) -> HTML {
    guard problems.isEmpty else {
      let items = problems.map { "<li>\($0)</li>" as HTML }
      return "<div id=\"check\" class=\"notice refused\"><b>Not valid:</b><ul>\(items)</ul></div>"
    }
    return "<div id=\"check\" class=\"notice done\"><b>Valid.</b> \(sizes(name: name, spec: spec))</div>"
  }

  /// The variants' sizes for a 4032x3024 photo, as the worker would lay them out.
  static func sizes(name: String, spec: String) -> HTML {
    guard let profile = try? ProfileSpec.parse(name: name, json: Data(spec.utf8)) else { return "" }
    let rows = profile.variants.map { variant -> HTML in
      let layout = VariantLayout.make(source: samplePhoto, box: variant.box, fit: variant.fit)
      return """
        <tr><td>\(variant.name)</td><td>\(variant.fit.rawValue) \(variant.width)×\(variant.height)</td>\
        <td>\(variant.format.rawValue)</td><td class="num">\(layout.output.width)×\(layout.output.height)</td></tr>
        """
    }
    return """
      <table class="sizes"><thead><tr><th>variant</th><th>box</th><th>format</th>\
      <th class="num">from a 4032×3024 photo</th></tr></thead><tbody>\(rows)</tbody></table>
      """
  }
}
