import Foundation

/// A TCP service (the test database) behind a link that can be cut without a word: two hops of
/// Tests/Support/freeze-proxy.py, the second inside a network namespace joined to a bridge by a veth
/// pair. `cut()` sets the bridge's port down: packets to and from the namespace go nowhere, no RST, no
/// ICMP, as when a host dies or a cloud network drops it (`make chaos` cuts its workers' links the same
/// way). A second port keeps the bridge up, so its route stays. Root only (`ip netns`).
final class VanishingLink: @unchecked Sendable {
  static var available: Bool { getuid() == 0 && (try? run(["ip", "netns", "list"]).code) == 0 }
  static let skipReason = "needs root and iproute2 (`ip netns`) to cut a link without a word"

  /// host:port that reaches the target through the namespace.
  let address: String
  private let tag: String
  private let hops: [HelperProcess]

  init(target host: String, port: Int) throws {
    let n = Int.random(in: 1...250)
    tag = "\(n)x\(UInt16.random(in: 0...UInt16.max))"
    let (bridge, namespace, outer, inner, keep) = Self.names(tag)
    let (hostIP, innerIP) = ("10.79.\(n).1", "10.79.\(n).2")
    for command in [
      ["ip", "link", "add", bridge, "type", "bridge"], ["ip", "addr", "add", "\(hostIP)/24", "dev", bridge],
      ["ip", "link", "set", bridge, "up"], ["ip", "netns", "add", namespace],
      ["ip", "link", "add", outer, "type", "veth", "peer", "name", inner],
      ["ip", "link", "set", inner, "netns", namespace], ["ip", "link", "set", outer, "master", bridge],
      ["ip", "link", "set", outer, "up"], ["ip", "-n", namespace, "link", "set", "lo", "up"],
      ["ip", "-n", namespace, "addr", "add", "\(innerIP)/24", "dev", inner],
      ["ip", "-n", namespace, "link", "set", inner, "up"],
      ["ip", "link", "add", keep, "type", "veth", "peer", "name", keep + "p"],
      ["ip", "link", "set", keep, "master", bridge], ["ip", "link", "set", keep, "up"],
      ["ip", "link", "set", keep + "p", "up"],
    ] {
      let result = try Self.run(command)
      guard result.code == 0 else {
        Self.remove(tag)
        throw CocoaError(
          .featureUnsupported, userInfo: [NSLocalizedDescriptionKey: "\(command): \(result.output)"])
      }
    }
    let proxy = TestDatabase.repoRoot.appendingPathComponent("Tests/Support/freeze-proxy.py").path
    let first = try HelperProcess(
      "/usr/bin/env", ["python3", proxy, "--listen", hostIP, "--target", "\(host):\(port)"])
    let second = try HelperProcess(
      "/usr/bin/env",
      [
        "ip", "netns", "exec", namespace, "python3", proxy, "--listen", innerIP, "--target",
        "\(hostIP):\(try first.announcedPort())",
      ])
    address = "\(innerIP):\(try second.announcedPort())"
    hops = [first, second]
  }

  /// (bridge, namespace, the bridge's port, its peer in the namespace, the port that keeps the bridge up)
  private static func names(_ tag: String) -> (String, String, String, String, String) {
    ("thvb\(tag)", "thumbd-vanish-\(tag)", "thvo\(tag)", "thvi\(tag)", "thvk\(tag)")
  }

  /// Ends the proxies: their connections close, as a client's would when its host comes back.
  /// (SIGKILL: a test runner's children may inherit a mask that holds SIGTERM back.)
  func closeProxies() {
    for hop in hops where hop.process.isRunning { kill(hop.process.processIdentifier, SIGKILL) }
  }

  func cut() throws { _ = try Self.run(["ip", "link", "set", Self.names(tag).2, "down"]) }
  func restore() throws { _ = try Self.run(["ip", "link", "set", Self.names(tag).2, "up"]) }

  private static func run(_ command: [String]) throws -> (code: Int32, output: String) {
    try runProgram("/usr/bin/env", command, withStandardError: true)
  }

  private static func remove(_ tag: String) {
    let (bridge, namespace, outer, _, keep) = names(tag)
    for command in [
      ["ip", "netns", "del", namespace], ["ip", "link", "del", outer], ["ip", "link", "del", keep],
      ["ip", "link", "del", bridge],
    ] { _ = try? Self.run(command) }
  }

  deinit {
    closeProxies()
    Self.remove(tag)
  }
}
