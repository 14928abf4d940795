import ArgumentParser
import Blocking
import Console
import Foundation
import Logging
import ServiceLifecycle
import Storage
import Worker

/// `thumbd console`: the operators' web console (docs/console.md).
struct ConsoleCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "console",
    abstract: "The operators' web console: the queue, jobs with their thumbnails, workers and profiles.",
    discussion: """
      Needs a password: --password-file FILE or THUMBD_CONSOLE_PASSWORD. It listens on loopback unless \
      told otherwise; put it behind a TLS proxy (which sets X-Forwarded-Proto) to reach it from elsewhere.
      """)

  @OptionGroup var database: DatabaseOptions

  @Option(help: "HOST:PORT to listen on (default: $THUMBD_CONSOLE_LISTEN, else 127.0.0.1:8090)")
  var listen: String?

  @Option(help: "a file whose first line is the console's password (else $THUMBD_CONSOLE_PASSWORD)")
  var passwordFile: String?

  @Flag(help: "show, never change: no buttons or forms, every change refused (use a read-only role too)")
  var readOnly = false

  @Option(help: "where the thumbnails are, to show them: the workers' --storage (default: $THUMBD_STORAGE)")
  var storage: String?

  @Option(help: "the S3 service's http(s)://host[:port] (default: $THUMBD_S3_ENDPOINT)")
  var s3Endpoint: String?

  @Option(help: "the region S3 requests are signed for (default: $THUMBD_S3_REGION, $AWS_REGION, us-east-1)")
  var s3Region: String?

  @Flag(help: "address S3 objects as ENDPOINT/BUCKET/KEY (default: $THUMBD_S3_PATH_STYLE)")
  var s3PathStyle = false

  func run() async throws {
    let environment = ProcessInfo.processInfo.environment
    func fail(_ message: String) -> ExitCode {
      FileHandle.standardError.write(Data("thumbd console: \(message)\n".utf8))
      return ExitCode(1)
    }
    let password: String
    if let passwordFile {
      guard let text = try? String(contentsOfFile: passwordFile, encoding: .utf8) else {
        throw fail("cannot read --password-file \(passwordFile)")
      }
      password = String(text.split(whereSeparator: \.isNewline).first ?? "")
    } else {
      password = environment["THUMBD_CONSOLE_PASSWORD"] ?? ""
    }
    guard !password.isEmpty else {
      throw fail(
        "set a password: --password-file FILE or THUMBD_CONSOLE_PASSWORD (the console has no open mode)")
    }
    let listenText =
      listen ?? environment["THUMBD_CONSOLE_LISTEN"].flatMap { $0.isEmpty ? nil : $0 } ?? "127.0.0.1:8090"
    guard let address = HTTPAddress(listenText) else {
      throw fail("--listen '\(listenText)' is not HOST:PORT")
    }
    var storageSettings: StorageSettings?
    if let url = storage ?? environment["THUMBD_STORAGE"].flatMap({ $0.isEmpty ? nil : $0 }) {
      var settings = StorageSettings(url: url)
      settings.s3Endpoint = s3Endpoint ?? environment["THUMBD_S3_ENDPOINT"].flatMap { $0.isEmpty ? nil : $0 }
      settings.s3Region =
        s3Region ?? environment["THUMBD_S3_REGION"] ?? environment["AWS_REGION"] ?? "us-east-1"
      settings.s3PathStyle =
        s3PathStyle || ["1", "true", "yes"].contains(environment["THUMBD_S3_PATH_STYLE"] ?? "")
      settings.s3Credentials = S3Credentials.from(environment: environment)
      if let problem = StorageURL.problem(settings) { throw fail("--storage '\(url)': \(problem)") }
      storageSettings = settings
    }
    let databaseURL = try database.resolved()
    Thumbd.bootstrapLogging(
      format: environment["THUMBD_LOG_FORMAT"].flatMap { WorkerConfig.LogFormat(rawValue: $0) } ?? .text,
      level: environment["THUMBD_LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0) } ?? .info,
      secrets: [password] + (DatabaseURL.password(in: databaseURL).map { [$0] } ?? [])
        + (storageSettings?.s3Credentials?.secrets ?? []))
    let logger = Logger(label: "thumbd.console")
    // The overview runs six statements at once; thumbnails are read from a local storage here too.
    let pool = BlockingPool(threads: 8, name: "thumbd-console")
    defer { pool.shutdown() }
    let settings = ConsoleSettings(
      databaseURL: databaseURL, host: address.host, port: address.port, password: password,
      readOnly: readOnly,
      storage: storageSettings)
    let (services, close) = try ConsoleServer.services(settings: settings, pool: pool, logger: logger)
    let group = ServiceGroup(
      configuration: ServiceGroupConfiguration(
        services: services.map { .init(service: $0) }, gracefulShutdownSignals: [.sigterm, .sigint],
        logger: logger))
    try await group.run()
    await close()
  }
}
