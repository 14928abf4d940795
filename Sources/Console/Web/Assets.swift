/// The console's stylesheet and script, served from the binary (`/static/...`): nothing to build and
/// nothing fetched from the internet. The script only keeps pages live and submits forms in place;
/// every page and action works without it.
enum Assets {
  static let css = """
    :root { --fg: #1d2327; --muted: #646970; --line: #dcdcde; --bg: #f6f7f7; --accent: #2271b1;
      --ok: #2e7d32; --bad: #b32d2e; --warn: #996800; font-family: system-ui, sans-serif; }
    body { margin: 0; color: var(--fg); background: var(--bg); font-size: 14px; }
    header { display: flex; align-items: center; gap: 1.5rem; padding: .6rem 1.2rem; background: #1d2327; }
    header a, header .brand { color: #fff; text-decoration: none; }
    header .brand { font-weight: 700; }
    header nav { display: flex; gap: 1rem; flex: 1; }
    header nav a[aria-current] { border-bottom: 2px solid #72aee6; }
    header .badge { background: var(--warn); color: #fff; padding: .1rem .4rem; border-radius: 3px; }
    main { padding: 1rem 1.2rem; max-width: 1400px; }
    h1 { font-size: 1.4rem; margin: .2rem 0 1rem; } h2 { font-size: 1.1rem; margin: 1.4rem 0 .6rem; }
    table { border-collapse: collapse; background: #fff; width: 100%; }
    th, td { text-align: left; padding: .35rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
    th { font-weight: 600; color: var(--muted); background: #fafafa; }
    td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
    .cards { display: flex; flex-wrap: wrap; gap: .8rem; }
    .card { background: #fff; border: 1px solid var(--line); padding: .7rem 1rem; min-width: 8rem; }
    .card .value { font-size: 1.5rem; font-weight: 600; } .card .label { color: var(--muted); }
    .grid { margin-top: 1rem; display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); gap: 1rem; }
    .panel { background: #fff; border: 1px solid var(--line); padding: .6rem 1rem; }
    .state { padding: .05rem .4rem; border-radius: 3px; background: #e0e0e0; }
    .state-succeeded { background: #d7f0d8; } .state-failed { background: #f8d7d7; }
    .state-running { background: #d6e6f7; } .state-queued { background: #f0ead2; }
    .state-cancelled, .state-forgotten { background: #e4e4e4; }
    .notice { padding: .5rem .8rem; border-left: 4px solid var(--ok); background: #fff; }
    .notice.refused { border-color: var(--bad); }
    form.action { display: inline; } form.logout button { background: none; color: #fff; border: 1px solid #888; }
    button { font: inherit; padding: .3rem .8rem; border: 1px solid var(--accent); background: var(--accent);
      color: #fff; border-radius: 3px; cursor: pointer; }
    button.danger { background: var(--bad); border-color: var(--bad); }
    button:disabled { opacity: .35; cursor: default; }
    .filters { display: flex; flex-wrap: wrap; gap: .5rem; align-items: end; margin-bottom: .8rem; }
    .filters label { display: flex; flex-direction: column; color: var(--muted); font-size: .85rem; }
    input, select, textarea { font: inherit; padding: .25rem .4rem; }
    textarea { font-family: ui-monospace, monospace; width: 100%; min-height: 16rem; }
    pre, code, .mono { font-family: ui-monospace, monospace; font-size: .85rem; }
    pre { background: #fff; border: 1px solid var(--line); padding: .6rem; overflow: auto; white-space: pre-wrap;
      word-break: break-all; }
    .variants { display: flex; flex-wrap: wrap; gap: 1rem; align-items: flex-start; }
    .variants figure { margin: 0; background: #fff; border: 1px solid var(--line); padding: .5rem;
      max-width: 420px; }
    .variants img { display: block; max-width: 100%; height: auto;
      background: repeating-conic-gradient(#eee 0 25%, #fff 0 50%) 0 0 / 16px 16px; }
    figcaption { color: var(--muted); margin-top: .3rem; overflow-wrap: anywhere; }
    dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; background: #fff;
      border: 1px solid var(--line); padding: .6rem 1rem; }
    dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; word-break: break-all; }
    .swatch { display: inline-block; width: 64px; height: 48px; vertical-align: middle; border: 1px solid var(--line); }
    .actions { display: flex; gap: .5rem; margin: .6rem 0 1rem; }
    .muted { color: var(--muted); } .bad { color: var(--bad); }
    svg text { font-size: 11px; fill: var(--muted); }
    .login { max-width: 22rem; margin: 4rem auto; background: #fff; border: 1px solid var(--line); padding: 1.2rem; }
    .login input { width: 100%; box-sizing: border-box; margin: .4rem 0 .8rem; }
    .pager { margin-top: .8rem; }
    """

  static let javascript = """
    // thumbd console: live regions and in-place form submission. Pages work without this script.
    (function () {
      "use strict";
      // At most one refresh every two seconds: a busy queue notifies many times a second, and each
      // refresh reads the page again.
      var refreshing = false, again = false, last = 0;
      function refresh() {
        if (refreshing) { again = true; return; }
        var wait = last + 2000 - Date.now();
        if (wait > 0) { if (!again) { again = true; setTimeout(function () { again = false; refresh(); }, wait); } return; }
        refreshing = true;
        last = Date.now();
        fetch(location.href, { headers: { "X-Console-Live": "1" }, credentials: "same-origin" })
          .then(function (r) { return r.ok ? r.text() : null; })
          .then(function (text) {
            if (!text) return;
            var fresh = new DOMParser().parseFromString(text, "text/html");
            document.querySelectorAll("[data-live][id]").forEach(function (old) {
              var next = fresh.getElementById(old.id);
              if (next) old.replaceWith(document.importNode(next, true));
            });
            bindForms();
          })
          .catch(function () {})
          .finally(function () {
            refreshing = false;
            if (again) { again = false; setTimeout(refresh, Math.max(0, last + 2000 - Date.now())); }
          });
      }
      function notice(text, ok) {
        var p = document.querySelector("p.notice");
        if (!p) { p = document.createElement("p"); document.querySelector("main").prepend(p); }
        p.className = "notice " + (ok ? "done" : "refused");
        p.setAttribute("role", "status");
        p.textContent = text;
      }
      function bindForms() {
        document.querySelectorAll("form.action[data-inplace]").forEach(function (form) {
          if (form.dataset.bound) return;
          form.dataset.bound = "1";
          form.addEventListener("submit", function (event) {
            event.preventDefault();
            fetch(form.action, { method: "POST", body: new URLSearchParams(new FormData(form)),
              headers: { "X-Console-Fetch": "1" }, credentials: "same-origin" })
              .then(function (r) { return r.text().then(function (t) { notice(t, r.ok); }); })
              .catch(function () { notice("The console did not answer: nothing was sent.", false); })
              .then(refresh);
          });
        });
      }
      var live = document.querySelector("[data-live]");
      if (live && window.EventSource) {
        var timer = null;
        var source = new EventSource("/live");
        source.addEventListener("change", function () {
          if (timer) return;
          timer = setTimeout(function () { timer = null; refresh(); }, 200);
        });
        setInterval(refresh, 15000);
      }
      var spec = document.getElementById("spec");
      if (spec) {
        // Each check is numbered: an answer older than the newest one shown is dropped.
        var pending = null, sent = 0, shown = 0;
        spec.addEventListener("input", function () {
          clearTimeout(pending);
          pending = setTimeout(function () {
            var form = spec.form, data = new URLSearchParams(new FormData(form)), number = ++sent;
            fetch("/profiles/check", { method: "POST", body: data, headers: { "X-Console-Fetch": "1" },
              credentials: "same-origin" })
              .then(function (r) { return r.text(); })
              .then(function (html) {
                if (number < shown) return;
                shown = number;
                var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("check");
                var old = document.getElementById("check");
                if (fresh && old) old.replaceWith(document.importNode(fresh, true));
              })
              .catch(function () {});
          }, 300);
        });
      }
      bindForms();
    })();
    """
}
