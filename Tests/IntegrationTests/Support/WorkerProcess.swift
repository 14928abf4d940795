import Foundation
import Imaging
import TestSupport
import Testing

/// A real `thumbd worker` process (the binary `swift build` put next to this test bundle), so tests can
/// SIGKILL, SIGSTOP and SIGTERM it. Spawned with posix_spawn and reaped with waitpid by us alone.
final class WorkerProcess: @unchecked Sendable {
  let pid: pid_t
  let logURL: URL
  private var exitStatus: Int32?

  static let binary = ThumbdBinary.url
  static let skipReason = ThumbdBinary.skipReason

  /// Starts `thumbd worker` (or another `command` of the binary: `console`) with THUMBD_* settings;
  /// stdout and stderr go to a log file.
  init(
    databaseURL: String, storage: URL, settings: [String: String] = [:], command: [String] = ["worker"]
  ) throws {
    let binary = try #require(Self.binary)
    logURL = storage.deletingLastPathComponent().appendingPathComponent("worker-\(UUID().uuidString).log")
    var environment = [
      "DATABASE_URL": databaseURL, "THUMBD_STORAGE": "file://\(storage.path)",
      "THUMBD_ALLOW_HOSTS": "127.0.0.1",
      "THUMBD_CONCURRENCY": "1", "THUMBD_LOG_LEVEL": "info", "PATH": "/usr/bin:/bin",
      // Several workers run at once in some tests: each takes a free port of its own.
      "THUMBD_HTTP_ADDRESS": "127.0.0.1:0",
    ]
    for (key, value) in settings { environment[key] = value }
    let arguments = [binary.path] + command
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, logURL.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    var pid: pid_t = 0
    let argv = arguments.map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { (argv + envp).forEach { free($0) } }
    let rc = posix_spawn(&pid, binary.path, &actions, nil, argv, envp)
    guard rc == 0 else { throw POSIXError(POSIXErrorCode(rawValue: rc) ?? .EINVAL) }
    self.pid = pid
  }

  var log: String { (try? String(contentsOf: logURL, encoding: .utf8)) ?? "" }

  func send(_ signal: Int32) { kill(pid, signal) }

  /// The port of the worker's HTTP endpoint, from its log line "http endpoint listening" (text or JSON),
  /// or of another line that names `http.port` (the console's "console listening").
  func httpPort(timeout: Double = 15, line marker: String = "http endpoint listening") async -> Int? {
    var port: Int?
    _ = await eventually(timeout: timeout) {
      for line in log.split(separator: "\n") where line.contains(marker) {
        let digits = line.split(separator: "http.port")[1].drop { !$0.isNumber }.prefix { $0.isNumber }
        port = Int(digits)
      }
      return port != nil
    }
    return port
  }

  /// Whether the process has exited (reaping it if so).
  var hasExited: Bool {
    if exitStatus != nil { return true }
    var status: Int32 = 0
    guard waitpid(pid, &status, WNOHANG) == pid else { return false }
    let signalled = status & 0x7f
    exitStatus = signalled == 0 ? (status >> 8) & 0xff : 128 + signalled
    return true
  }

  /// Waits up to `timeout` seconds for the process to exit; its exit code (128+n for signal n), or nil.
  func waitForExit(timeout: Double) async -> Int32? {
    let deadline = Date().addingTimeInterval(timeout)
    while exitStatus == nil && Date() < deadline {
      var status: Int32 = 0
      if waitpid(pid, &status, WNOHANG) == pid {
        let signalled = status & 0x7f
        exitStatus = signalled == 0 ? (status >> 8) & 0xff : 128 + signalled
      } else {
        try? await Task.sleep(for: .milliseconds(50))
      }
    }
    return exitStatus
  }

  deinit {
    if exitStatus == nil {
      kill(pid, SIGKILL)
      var status: Int32 = 0
      _ = waitpid(pid, &status, 0)
    }
  }
}

/// A JPEG made here (a gradient, so it compresses to a realistic size), for tests that must not depend
/// on ../shared.
func makeTestJPEG(width: Int = 1200, height: Int = 900) throws -> [UInt8] {
  var image = PixelBuffer(width: width, height: height, channels: 3)
  for y in 0..<height {
    for x in 0..<width {
      let i = (y * width + x) * 3
      image.pixels[i] = UInt8(x * 255 / width)
      image.pixels[i + 1] = UInt8(y * 255 / height)
      image.pixels[i + 2] = UInt8((x ^ y) & 0xff)
    }
  }
  return try JPEG.encode(image, quality: 90)
}

/// An origin serving one generated photo as `photo.jpg`, and a storage folder beside it.
struct QueueFixture {
  let origin: TestOrigin
  let storage: URL
  let photoBytes: Int

  init() throws {
    let root = try makeTemporaryDirectory()
    let photo = try makeTestJPEG()
    try Data(photo).write(to: root.appendingPathComponent("photo.jpg"))
    origin = try TestOrigin(root: root)
    storage = root.appendingPathComponent("thumbnails")
    try FileManager.default.createDirectory(at: storage, withIntermediateDirectories: true)
    photoBytes = photo.count
  }

  /// A URL whose download takes about `seconds` (the origin's /slow/ route, in 16 chunks).
  func slowURL(seconds: Double) -> String {
    let chunk = photoBytes / 16 + 1
    return origin.url("/slow/photo.jpg?chunk=\(chunk)&delay=\(seconds / 16)")
  }
}

/// `thumbd migrate` on `database` with this checkout's migrations, as an operator runs it.
func runMigrate(_ database: String) throws -> (code: Int32, output: String) {
  let binary = try #require(WorkerProcess.binary)
  return try runProgram(
    binary.path, ["migrate"],
    environment: [
      "DATABASE_URL": database, "PATH": "/usr/bin:/bin",
      "THUMBD_MIGRATIONS": TestDatabase.repoRoot.appendingPathComponent("migrations").path,
    ], withStandardError: true)
}

/// The test virtualenv scripts/install-deps.sh makes (moto, boto3, standardwebhooks, hadolint):
/// `THUMBD_TEST_VENV`, else `$XDG_CACHE_HOME/thumbd/test-venv`.
let testVirtualenv: String = {
  let environment = ProcessInfo.processInfo.environment
  let cache = environment["XDG_CACHE_HOME"] ?? (NSHomeDirectory() + "/.cache")
  return environment["THUMBD_TEST_VENV"] ?? (cache + "/thumbd/test-venv")
}()

/// Runs a program to its end with posix_spawn and waitpid (not Foundation's Process, whose
/// waitUntilExit was seen to miss a child's exit here): its exit code and standard output.
/// `environment` nil: this process's own. `withStandardError`: standard error joins the output.
func runProgram(
  _ path: String, _ arguments: [String], environment: [String: String]? = nil, withStandardError: Bool = false
) throws -> (code: Int32, output: String) {
  let outputURL = FileManager.default.temporaryDirectory.appendingPathComponent(
    "thumbd-run-\(UUID().uuidString)")
  defer { try? FileManager.default.removeItem(at: outputURL) }
  var actions = posix_spawn_file_actions_t()
  posix_spawn_file_actions_init(&actions)
  defer { posix_spawn_file_actions_destroy(&actions) }
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
  posix_spawn_file_actions_addopen(&actions, 1, outputURL.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
  if withStandardError {
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
  } else {
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
  }
  let env = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
  let argv = ([path] + arguments).map { strdup($0) } + [nil]
  let envp = env.map { strdup($0) } + [nil]
  defer { (argv + envp).forEach { free($0) } }
  var pid: pid_t = 0
  let rc = posix_spawn(&pid, path, &actions, nil, argv, envp)
  guard rc == 0 else { throw POSIXError(POSIXErrorCode(rawValue: rc) ?? .EINVAL) }
  var status: Int32 = 0
  while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
  let signalled = status & 0x7f
  let code = signalled == 0 ? (status >> 8) & 0xff : 128 + signalled
  return (code, (try? String(contentsOf: outputURL, encoding: .utf8)) ?? "")
}
