import Testing

@testable import Console

@Suite struct HTMLTests {
  @Test func interpolatedTextIsEscapedAndMarkupIsNot() {
    let metadata = "<script>alert('x')</script> & \"quoted\""
    let html: HTML = "<p title=\"\(metadata)\">\(metadata)</p>"
    #expect(
      html.text
        == "<p title=\"&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;quoted&quot;\">"
        + "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;quoted&quot;</p>")
    let inner: HTML = "<b>\(metadata)</b>"
    let outer: HTML = "<div>\(inner)</div>"
    #expect(outer.text.hasPrefix("<div><b>&lt;script&gt;"))
    #expect(!outer.text.contains("<script>"))
  }

  @Test func anOptionalNilIsEmptyAndIntegersAreWritten() {
    let missing: String? = nil
    let html: HTML = "[\(missing)][\(Int64(42))]"
    #expect(html.text == "[][42]")
  }
}

@Suite struct FormTests {
  @Test func decodesPlusPercentAndEmptyFields() {
    let form = Form(encoded: "a=1+2&b=%3Cx%3E&c=&d&e=%zz&a=second")
    #expect(form["a"] == "1 2")
    #expect(form["b"] == "<x>")
    #expect(form["c"] == nil)
    #expect(form["d"] == nil)
    #expect(form["e"] == "%zz")
    #expect(form.pairs.count == 6)
  }

  @Test func encodingRoundTrips() {
    let value = "https://cdn.example/a b?x=1&y=<2>#ü"
    #expect(Form(encoded: "v=" + Form.encode(value))["v"] == value)
    #expect(Form.query([("a", "1"), ("b", nil), ("c", "")]) == "a=1")
  }

  @Test func onlyLocalPathsAreFollowedAfterLogin() {
    #expect(ConsoleRoutes.safeNext("/jobs?state=failed") == "/jobs?state=failed")
    #expect(ConsoleRoutes.safeNext("//evil.example/") == "/")
    #expect(ConsoleRoutes.safeNext("https://evil.example/") == "/")
    #expect(ConsoleRoutes.safeNext("/\\evil.example") == "/")
    #expect(ConsoleRoutes.safeNext("/\t/evil.example") == "/")
    #expect(ConsoleRoutes.safeNext("/ /evil.example") == "/")
    #expect(ConsoleRoutes.safeNext(nil) == "/")
  }
}

@Suite struct JobFilterTests {
  @Test func aTimeFilterIsATimeOrNoFilter() {
    #expect(JobFilter.timestamp("2026-11-29T16:05") == "2026-11-29 16:05")
    #expect(JobFilter.timestamp("2026-11-29T16:05:30") == "2026-11-29 16:05:30")
    #expect(JobFilter.timestamp("2026-13-29T16:05") == nil)
    #expect(JobFilter.timestamp("9999-99-99T99:99") == nil)
    #expect(JobFilter.timestamp("2026-11-29T16:05'; DROP") == nil)
    #expect(JobFilter.timestamp("yesterday") == nil)
  }

  @Test func unknownStatesAndBadKeysetsAreNoFilter() {
    let filter = JobFilter(query: Form(encoded: "state=exploded&before=abc&owner=u1"))
    #expect(filter.state == nil && filter.before == nil && filter.owner == "u1")
    #expect(filter.hasIndexedFilter)
    #expect(filter.query(before: 10) == "owner=u1&before=10")
  }
}
