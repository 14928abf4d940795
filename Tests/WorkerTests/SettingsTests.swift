import Foundation
import Logging
import Testing

@testable import Worker

/// The one model of the worker's options, without a process: precedence, validation, the README.
@Suite struct SettingsTests {
  let base = ["DATABASE_URL": "postgresql://db/thumbs", "THUMBD_STORAGE": "file:///srv/thumbs"]

  func resolve(_ arguments: [String], env: [String: String] = [:], file: String? = nil) -> SettingsResolution
  {
    WorkerConfig.resolve(
      arguments: arguments + (file == nil ? [] : ["--config", "/etc/thumbd.yaml"]),
      environment: base.merging(env) { $1 }, readFile: { _ in file ?? "" })
  }

  @Test func precedenceIsFlagEnvironmentFileDefault() {
    let result = resolve(
      ["--lease-ttl=20"], env: ["THUMBD_LEASE_TTL": "30", "THUMBD_POLL_INTERVAL": "3"],
      file: "lease-ttl: 40\npoll-interval: 4\nshutdown-grace: 5\n")
    #expect(result.errors.isEmpty)
    #expect(result.settings.leaseSeconds == 20 && result.sources["lease-ttl"] == .flag)
    #expect(result.settings.pollInterval == 3)
    #expect(result.sources["poll-interval"] == .environment("THUMBD_POLL_INTERVAL"))
    #expect(
      result.settings.shutdownGrace == 5
        && result.sources["shutdown-grace"] == .file("/etc/thumbd.yaml"))
    #expect(result.settings.retentionSeconds == 7 * 86400 && result.sources["retention"] == .default)
  }

  @Test func valuesAreParsedAsOperatorsWriteThem() {
    let result = resolve([
      "--memory-budget", "1GiB", "--drain", "--retention", "12h", "--http-address", "off", "--log-format",
      "json",
      "--fetch-timeout", "5", "--allow-hosts", "127.0.0.1,192.0.2.0/24",
    ])
    #expect(result.errors.isEmpty, "\(result.errors)")
    let settings = result.settings
    #expect(settings.memoryBudget == 1 << 30)
    #expect(settings.drain)
    #expect(settings.retentionSeconds == 43200)
    #expect(settings.httpAddress == nil)
    #expect(settings.logFormat == .json)
    // A connection may not outlast the whole download.
    #expect(settings.fetch.connectTimeout == 5)
    #expect(settings.allowHosts == "127.0.0.1,192.0.2.0/24")
  }

  @Test func everyBadValueIsReportedOnce() {
    let result = resolve(
      ["--concurrency", "0", "--nonsense"], env: ["THUMBD_MEMORY_BUDGET": "lots"],
      file: "original-cache: 1GiB\nretention: forever\n")
    let described = result.errors.map(\.description)
    #expect(described.contains("concurrency (flag): '0' is not a whole number in 1...256"))
    #expect(described.contains("nonsense (flag): unknown option --nonsense"))
    #expect(result.errors.count == 5, "\(described)")
    let missing = WorkerConfig.resolve(arguments: ["--lease-ttl"], environment: base)
    #expect(missing.errors.map(\.description) == ["lease-ttl (flag): --lease-ttl needs a value"])
    #expect(described.contains { $0.hasPrefix("memory-budget (env THUMBD_MEMORY_BUDGET):") })
    #expect(described.contains { $0.hasPrefix("retention (file /etc/thumbd.yaml):") })
    #expect(described.contains { $0.hasPrefix("original-cache (file /etc/thumbd.yaml): must be smaller") })
  }

  @Test func theReportIsValidYAMLWithSecretsMasked() throws {
    let result = resolve([], env: ["DATABASE_URL": "postgresql://u:pa55word@db/thumbs"])
    #expect(result.report.contains("database-url: postgresql://u:****@db/thumbs  # env"))
    #expect(!result.report.joined().contains("pa55word"))
    #expect(result.settings.secrets == ["pa55word"])
    #expect(result.report.count == WorkerOption.all.count)
  }

  @Test func theReadmeTableIsTheModel() throws {
    let readme = try String(
      contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("README.md"), encoding: .utf8)
    let begin = try #require(readme.range(of: "<!-- options:begin -->\n"))
    let end = try #require(readme.range(of: "\n<!-- options:end -->"))
    #expect(
      String(readme[begin.upperBound..<end.lowerBound]) == WorkerOption.markdownTable,
      "README.md's option table differs from the model: paste the output of `thumbd config options`")
  }

  @Test func addressesParse() {
    #expect(HTTPAddress("127.0.0.1:0") == HTTPAddress(host: "127.0.0.1", port: 0))
    #expect(HTTPAddress(":9464") == HTTPAddress(host: "0.0.0.0", port: 9464))
    #expect(HTTPAddress("[::1]:80")?.description == "[::1]:80")
    #expect(HTTPAddress("localhost") == nil)
    #expect(HTTPAddress("h:70000") == nil)
  }
}

@Suite struct LogFormatTests {
  final class Lines: @unchecked Sendable {
    let lock = NSLock()
    var lines: [String] = []
    func append(_ bytes: [UInt8]) { lock.withLock { lines.append(String(decoding: bytes, as: UTF8.self)) } }
  }

  @Test func jsonLinesCarryTimestampLevelMessageAndMetadata() throws {
    let sink = Lines()
    var logger = Logger(label: "test") { label in
      JSONLogHandler(label: label, output: { sink.append($0) })
    }
    logger[metadataKey: "worker.id"] = "w1"
    logger.notice("job failed", metadata: ["job.id": "42", "error.message": "quote \" newline \n tab \t"])
    let line = try #require(sink.lines.first)
    #expect(line.hasSuffix("}\n") && line.filter { $0 == "\n" }.count == 1)
    let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String])
    #expect(object["level"] == "notice" && object["msg"] == "job failed" && object["job.id"] == "42")
    #expect(object["worker.id"] == "w1" && object["error.message"] == "quote \" newline \n tab \t")
    #expect(object["ts"]?.hasSuffix("Z") == true)
  }

  @Test func secretsAreMaskedInMessagesAndMetadata() {
    let sink = Lines()
    let logger = Logger(label: "test") { label in
      RedactingLogHandler(JSONLogHandler(label: label, output: { sink.append($0) }), secrets: ["pa55word"])
    }
    logger.error("connect to postgresql://u:pa55word@db failed", metadata: ["url": "x pa55word y"])
    #expect(sink.lines.count == 1)
    #expect(!sink.lines[0].contains("pa55word"))
    #expect(sink.lines[0].contains("u:****@db") && sink.lines[0].contains("x **** y"))
  }
}
