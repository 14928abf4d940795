import Foundation
import TestSupport
import Testing

/// `thumbd console` in a real Chromium (Debian's, driven by Playwright: Tests/Support/console-browser.py)
/// against a real worker, a loopback origin and PostgreSQL: the login (refused, then let in), the
/// overview changing while jobs run, a failed job found by its external id, its error, Retry followed
/// live to success with every variant's image loaded, Forget after its confirmation, POSTs without or
/// with a wrong token refused with nothing changed, and markup in metadata and a source URL shown as
/// text. THUMBD_CONSOLE_SCREENSHOTS=DIR keeps a screenshot of each page there (docs/console.md's).
@Suite(
  .serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)),
  .enabled(if: WorkerProcess.binary != nil, Comment(rawValue: WorkerProcess.skipReason)))
struct ConsoleBrowserTests {
  static let password = "a console password of the test's own"

  @Test func anOperatorSessionInChromium() async throws {
    let python = testVirtualenv + "/bin/python"
    let playwright = try runProgram(python, ["-c", "import playwright.sync_api"])
    try #require(playwright.code == 0, "Playwright is not in \(testVirtualenv): run scripts/install-deps.sh")
    let chromium = try runProgram("/bin/sh", ["-c", "command -v chromium"])
    try #require(chromium.code == 0, "chromium is not installed: run scripts/install-deps.sh")

    let database = try TestDatabase.create()
    let folder = try makeTemporaryDirectory()
    defer { try? FileManager.default.removeItem(at: folder) }
    let (originRoot, storage) = (
      folder.appendingPathComponent("origin"), folder.appendingPathComponent("storage")
    )
    for place in [originRoot, storage] {
      try FileManager.default.createDirectory(at: place, withIntermediateDirectories: true)
    }
    let photo = folder.appendingPathComponent("photo.jpg")
    try Data(try makeTestJPEG(width: 1600, height: 1200)).write(to: photo)
    try FileManager.default.copyItem(at: photo, to: originRoot.appendingPathComponent("photo.jpg"))
    let origin = try TestOrigin(root: originRoot)
    let worker = try WorkerProcess(
      databaseURL: database, storage: storage, settings: ["THUMBD_CONCURRENCY": "2"])
    let console = try WorkerProcess(
      databaseURL: database, storage: storage, settings: ["THUMBD_CONSOLE_PASSWORD": Self.password],
      command: ["console", "--listen", "127.0.0.1:0", "--storage", "file://\(storage.path)"])
    let port = try #require(await console.httpPort(line: "console listening"), "console log: \(console.log)")

    let script = TestDatabase.repoRoot.appendingPathComponent("Tests/Support/console-browser.py")
    var arguments = [
      script.path,
      "--console", "http://127.0.0.1:\(port)", "--password", Self.password, "--database", database,
      "--origin", origin.url(""), "--origin-root", originRoot.path, "--photo", photo.path,
    ]
    if let screenshots = ProcessInfo.processInfo.environment["THUMBD_CONSOLE_SCREENSHOTS"] {
      arguments += ["--screenshots", screenshots]
    }
    let run = try runProgram(python, arguments, withStandardError: true)
    let passed = run.output.split(separator: "\n").filter { $0.hasPrefix("ok ") }
    #expect(
      run.code == 0,
      "the browser session stopped: \(run.output.suffix(3000))\nworker: \(worker.log.suffix(1500))\nconsole: \(console.log.suffix(1500))"
    )
    // Every check of the script ran and passed (a script that stopped early has fewer).
    let checks = try String(contentsOf: script, encoding: .utf8).components(separatedBy: "check(\"").count - 1
    #expect(checks > 20 && passed.count == checks, "\(passed.count) of \(checks) checks passed")
    #expect(!console.log.contains("failed"), "console log: \(console.log.suffix(2000))")
  }
}
