import Foundation
import Testing
import Worker

/// `thumbd config check`, run as operators run it: the precedence of the contract, masking, and every
/// error with its key and source.
@Suite(.enabled(if: WorkerProcess.binary != nil, Comment(rawValue: WorkerProcess.skipReason)))
struct ConfigCheckTests {
  /// Runs `thumbd ARGS` with exactly `environment`; its exit code and standard output lines.
  func thumbd(_ arguments: [String], environment: [String: String]) throws -> (code: Int32, lines: [String]) {
    let binary = try #require(WorkerProcess.binary)
    let (code, output) = try runProgram(
      binary.path, arguments, environment: environment.merging(["PATH": "/usr/bin:/bin"]) { $1 })
    return (code, output.split(separator: "\n").map(String.init))
  }

  func file(_ yaml: String) throws -> String {
    let url = try makeTemporaryDirectory().appendingPathComponent("thumbd.yaml")
    try yaml.write(to: url, atomically: true, encoding: .utf8)
    return url.path
  }

  @Test func flagBeatsEnvironmentBeatsFileBeatsDefault() throws {
    let path = try file(
      """
      storage: file:///srv/thumbs
      concurrency: 3
      memory-budget: 300MiB
      lease-ttl: 30
      allow-hosts: [127.0.0.1, 192.0.2.0/24]
      """)
    let (code, lines) = try thumbd(
      ["config", "check", "--config", path, "--concurrency", "5"],
      environment: [
        "DATABASE_URL": "postgresql://thumbd@db/thumbs", "THUMBD_CONCURRENCY": "4",
        "THUMBD_MEMORY_BUDGET": "400MiB",
      ])
    #expect(code == 0, "\(lines)")
    #expect(lines.contains("concurrency: 5  # flag"))
    #expect(lines.contains("memory-budget: 400MiB  # env"))
    #expect(lines.contains("lease-ttl: 30  # file"))
    #expect(lines.contains("storage: file:///srv/thumbs  # file"))
    #expect(lines.contains("allow-hosts: 127.0.0.1,192.0.2.0/24  # file"))
    #expect(lines.contains("fetch-timeout: 30  # default"))
    #expect(lines.contains("database-url: postgresql://thumbd@db/thumbs  # env"))
    // One line per option of the model, no more.
    #expect(lines.count == WorkerOption.all.count)
  }

  @Test func passwordsAreMasked() throws {
    for url in ["postgresql://thumbd:s3cret-pass@db:5432/thumbs", "host=db user=thumbd password=s3cret-pass"]
    {
      let (code, lines) = try thumbd(
        ["config", "check", "--storage", "file:///srv/thumbs"], environment: ["DATABASE_URL": url])
      #expect(code == 0)
      let line = try #require(lines.first { $0.hasPrefix("database-url: ") })
      #expect(line.contains("****") && line.hasSuffix("# env"), "\(line)")
      #expect(!lines.joined().contains("s3cret-pass"))
    }
  }

  @Test func everyErrorIsReportedWithKeyAndSourceAndExitsOne() throws {
    let path = try file(
      """
      storage: file:///srv/thumbs
      memory-budgte: 512MiB
      lease-ttl: soon
      """)
    let (code, lines) = try thumbd(
      ["config", "check", "--config", path, "--concurrency", "0"],
      environment: ["DATABASE_URL": "postgresql://db/thumbs", "THUMBD_LOG_FORMAT": "yaml"])
    #expect(code == 1)
    #expect(lines.contains { $0.contains("memory-budgte (file \(path)): unknown key") }, "\(lines)")
    #expect(lines.contains { $0.contains("lease-ttl (file \(path)):") && $0.contains("'soon'") }, "\(lines)")
    #expect(lines.contains { $0.contains("concurrency (flag):") }, "\(lines)")
    #expect(lines.contains { $0.contains("log-format (env THUMBD_LOG_FORMAT):") }, "\(lines)")
    #expect(lines.count == 4)
  }

  @Test func aMissingRequiredSettingOrFileIsAnError() throws {
    let (code, lines) = try thumbd(["config", "check", "--config", "/nonexistent.yaml"], environment: [:])
    #expect(code == 1)
    #expect(lines.contains { $0.contains("config (flag): cannot read '/nonexistent.yaml'") }, "\(lines)")
    #expect(lines.contains { $0.contains("database-url (default): required") }, "\(lines)")
    #expect(lines.contains { $0.contains("storage (default): required") }, "\(lines)")
  }

  @Test func theWorkerRefusesTheSameErrorsBeforeTouchingTheDatabase() throws {
    let (code, _) = try thumbd(
      ["worker", "--storage", "file:///srv/thumbs", "--memory-budget", "lots"],
      environment: ["DATABASE_URL": "postgresql://127.0.0.1:1/none"])
    #expect(code == 1)
  }
}
