/// `/login`: the one form an unknown browser sees.
enum LoginPage {
  /// `csrf`: the login form's own token, paired with the cookie set with the form.
  static func body(refused: Bool, next: String, csrf: String) -> HTML {
    let message: HTML =
      refused ? "<p class=\"notice refused\" role=\"alert\">That password is not right.</p>" : ""
    return """
      <!doctype html>
      <html lang="en"><head><meta charset="utf-8"><title>Log in · thumbd</title>
      <meta name="viewport" content="width=device-width, initial-scale=1">
      <link rel="stylesheet" href="/static/console.css"></head>
      <body><form class="login" method="post" action="/login"><h1>thumbd console</h1>\(message)
      <input type="hidden" name="csrf" value="\(csrf)"><input type="hidden" name="next" value="\(next)">
      <label for="password">Password</label>
      <input id="password" type="password" name="password" autocomplete="current-password" autofocus required>
      <button type="submit">Log in</button></form></body></html>

      """
  }
}
