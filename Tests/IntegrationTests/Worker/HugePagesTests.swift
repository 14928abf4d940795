import Foundation
import Testing

/// `thumbd worker` runs itself again with glibc's huge-page tunable, keeping its pid, and never overrides
/// a GLIBC_TUNABLES that names it. Read from the running process's environment (/proc/PID/environ): the
/// worker waits for an unreachable database, so it stays up to be looked at.
@Suite(.enabled(if: WorkerProcess.binary != nil, Comment(rawValue: WorkerProcess.skipReason)))
struct HugePagesTests {
  /// The GLIBC_TUNABLES of a worker started with `environment`, once it has run for a moment.
  func tunables(startedWith environment: [String: String]) async throws -> String? {
    let binary = try #require(WorkerProcess.binary)
    let child = Process()
    child.executableURL = binary
    child.arguments = [
      "worker", "--database-url", "postgresql://thumbd@127.0.0.1:1/none", "--storage",
      "file://\(try makeTemporaryDirectory().path)", "--http-address", "off",
    ]
    child.environment = environment.merging(["PATH": "/usr/bin:/bin"]) { $1 }
    child.standardOutput = FileHandle.nullDevice
    child.standardError = FileHandle.nullDevice
    try child.run()
    defer {
      child.terminate()
      child.waitUntilExit()
    }
    // The exec comes first of all; a second is plenty for it.
    try await Task.sleep(for: .seconds(1))
    #expect(child.isRunning, "the worker exited with \(child.terminationStatus)")
    let environ = try Data(contentsOf: URL(fileURLWithPath: "/proc/\(child.processIdentifier)/environ"))
    return environ.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
      .first { $0.hasPrefix("GLIBC_TUNABLES=") }.map { String($0.dropFirst("GLIBC_TUNABLES=".count)) }
  }

  @Test func theWorkerRunsWithHugePagesForMallocUnderTheSamePid() async throws {
    #expect(try await tunables(startedWith: [:]) == "glibc.malloc.hugetlb=1")
  }

  /// The exec adds the tunable after the operator's (strace shows `...tcache_count=8:glibc.malloc.hugetlb=1`
  /// given to execve), but glibc 2.36 rewrites the variable in the environment block as it parses it, so
  /// only the first tunable can be read back there. What is checked: the operator's tunable is still
  /// there, and the worker runs.
  @Test func otherTunablesAreKept() async throws {
    let seen = try await tunables(startedWith: ["GLIBC_TUNABLES": "glibc.malloc.tcache_count=8"])
    #expect(seen?.hasPrefix("glibc.malloc.tcache_count=8") == true, "\(seen ?? "none")")
  }

  @Test func theOperatorsChoiceStands() async throws {
    #expect(
      try await tunables(startedWith: ["GLIBC_TUNABLES": "glibc.malloc.hugetlb=0"])
        == "glibc.malloc.hugetlb=0")
  }
}
