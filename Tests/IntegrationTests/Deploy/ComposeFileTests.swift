import Foundation
import Testing
import Yams

/// deploy/compose.yaml (no Docker engine runs here, so its structure is what is checked): the schema is
/// migrated before the worker and the console start, the console reads the worker's thumbnails
/// read-only, listens on loopback only and will not start without a password, and every thumbd
/// command in it is one the binary takes.
struct ComposeFileTests {
  static let url = TestDatabase.repoRoot.appendingPathComponent("deploy/compose.yaml")

  @Test func theConsoleRunsBesideAWorkerOnTheMigratedSchema() throws {
    let compose = try #require(
      try Yams.load(yaml: String(contentsOf: Self.url, encoding: .utf8)) as? [String: Any])
    let services = try #require(compose["services"] as? [String: [String: Any]])
    #expect(Set(services.keys) == ["postgres", "migrate", "worker", "console"])
    for name in ["worker", "console"] {
      let dependsOn = services[name]?["depends_on"] as? [String: [String: String]]
      #expect(dependsOn?["migrate"]?["condition"] == "service_completed_successfully", "\(name)")
    }
    let console = try #require(services["console"])
    #expect(console["ports"] as? [String] == ["127.0.0.1:8090:8090"], "loopback only")
    #expect((console["volumes"] as? [String])?.allSatisfy { $0.hasSuffix(":ro") } == true)
    let environment = try #require(console["environment"] as? [String: String])
    #expect(environment["THUMBD_CONSOLE_PASSWORD"]?.contains(":?") == true, "required, no default")
    let workerVolumes = try #require(services["worker"]?["volumes"] as? [String])
    #expect(workerVolumes.map { $0 + ":ro" } == console["volumes"] as? [String], "the same thumbnails")

    // Each command is one the binary takes.
    let binary = try #require(WorkerProcess.binary)
    for name in ["migrate", "worker", "console"] {
      let command = try #require(services[name]?["command"] as? [String])
      let help = try runProgram(binary.path, command + ["--help"])
      #expect(help.code == 0, "\(name): thumbd \(command.joined(separator: " ")) --help: \(help.output)")
    }
  }
}
