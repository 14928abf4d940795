/// Decides whether a worker may connect to an address. Originals come from URLs that users can
/// influence, so without this a URL could make the worker read cloud metadata (169.254.169.254) or
/// internal services. The check runs on the address actually connected to (see Fetch), so DNS
/// rebinding and redirects cannot get around it.
public struct AddressPolicy: Sendable {
  /// Host names (exact, case-insensitive) and networks exempt from the block (`--allow-hosts`).
  public var allowedHosts: Set<String>
  public var allowedNetworks: [IPNetwork]

  public init(allowedHosts: Set<String> = [], allowedNetworks: [IPNetwork] = []) {
    self.allowedHosts = Set(allowedHosts.map { $0.lowercased() })
    self.allowedNetworks = allowedNetworks
  }

  /// From a comma- or space-separated list of host names, addresses and CIDRs.
  public init(allowList: String) throws(ParseError) {
    var hosts = Set<String>()
    var networks: [IPNetwork] = []
    for item in allowList.split(whereSeparator: { $0 == "," || $0 == " " }) where !item.isEmpty {
      let entry = String(item)
      if let network = IPNetwork(cidr: entry) {
        networks.append(network)
      } else if entry.contains("/") {
        throw ParseError(text: entry)
      } else {
        hosts.insert(entry.lowercased())
      }
    }
    self.init(allowedHosts: hosts, allowedNetworks: networks)
  }

  public struct ParseError: Error, Sendable, CustomStringConvertible {
    public var text: String
    public var description: String { "'\(text)' is not a host, an IP address or a CIDR network" }
  }

  /// Networks no original should live on: loopback, private, link-local (cloud metadata), CGNAT,
  /// unique-local, multicast, reserved and unspecified, for IPv4 and IPv6.
  public static let blockedNetworks: [IPNetwork] = [
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
    "192.0.0.0/24", "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24",
    "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
    "::/128", "::1/128", "64:ff9b:1::/48", "100::/64", "2001:db8::/32", "fc00::/7", "fe80::/10", "ff00::/8",
  ].map { IPNetwork(cidr: $0)! }

  /// The check for connections of one URL naming `host`: whether the numeric address curl is about to
  /// use is allowed (text that is not an address is not).
  public func policy(host: String?) -> @Sendable (String) -> Bool {
    { text in IPAddress(text).map { permits(address: $0, host: host) } ?? false }
  }

  /// Whether connecting to `address` (for a URL naming `host`) is allowed.
  public func permits(address: IPAddress, host: String?) -> Bool {
    if let host, allowedHosts.contains(host.lowercased()) { return true }
    if allowedHosts.contains(address.description) { return true }
    if allowedNetworks.contains(where: { $0.contains(address) }) { return true }
    // An IPv4-mapped IPv6 address is judged as the IPv4 address it carries.
    let judged = address.unmappedIPv4 ?? address
    return !Self.blockedNetworks.contains(where: { $0.contains(judged) })
  }
}

/// An IPv4 or IPv6 address as 16 bytes (IPv4 kept in its own family for CIDR matching).
public struct IPAddress: Hashable, Sendable, CustomStringConvertible {
  public var bytes: [UInt8]
  public var isIPv4: Bool { bytes.count == 4 }

  public init?(_ text: String) {
    if let v4 = Self.parseIPv4(Substring(text)) {
      bytes = v4
    } else if let v6 = Self.parseIPv6(text) {
      bytes = v6
    } else {
      return nil
    }
  }

  init(bytes: [UInt8]) { self.bytes = bytes }

  /// For ::ffff:a.b.c.d, the IPv4 address.
  public var unmappedIPv4: IPAddress? {
    guard bytes.count == 16, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF
    else { return nil }
    return IPAddress(bytes: Array(bytes[12..<16]))
  }

  public var description: String {
    if isIPv4 { return bytes.map(String.init).joined(separator: ".") }
    return stride(from: 0, to: 16, by: 2).map { String(Int(bytes[$0]) << 8 | Int(bytes[$0 + 1]), radix: 16) }
      .joined(separator: ":")
  }

  static func parseIPv4(_ text: Substring) -> [UInt8]? {
    let parts = text.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count == 4 else { return nil }
    var out: [UInt8] = []
    for part in parts {
      guard !part.isEmpty, part.count <= 3, part.allSatisfy(\.isASCIIDigit), let v = UInt8(part) else {
        return nil
      }
      out.append(v)
    }
    return out
  }

  static func parseIPv6(_ text: String) -> [UInt8]? {
    var text = Substring(text)
    if let zone = text.firstIndex(of: "%") { text = text[..<zone] }  // fe80::1%eth0
    guard text.contains(":") else { return nil }
    var tail: [UInt8] = []
    // A trailing dotted IPv4 (::ffff:1.2.3.4) fills the last 32 bits.
    if let lastColon = text.lastIndex(of: ":"), text[text.index(after: lastColon)...].contains(".") {
      guard let v4 = parseIPv4(text[text.index(after: lastColon)...]) else { return nil }
      tail = v4
      text = text[...lastColon]
      if text.hasSuffix(":") && !text.hasSuffix("::") { text = text.dropLast() }
    }
    let halves = text.components(separatedBy: "::")
    guard halves.count <= 2 else { return nil }
    func groups(_ s: String) -> [UInt16]? {
      if s.isEmpty { return [] }
      var out: [UInt16] = []
      for g in s.split(separator: ":", omittingEmptySubsequences: false) {
        guard !g.isEmpty, g.count <= 4, let v = UInt16(g, radix: 16) else { return nil }
        out.append(v)
      }
      return out
    }
    guard let head = groups(halves[0]) else { return nil }
    let rest = halves.count == 2 ? groups(halves[1]) : []
    guard let rest else { return nil }
    let total = 8 - tail.count / 2
    var all: [UInt16]
    if halves.count == 2 {
      guard head.count + rest.count < total else { return nil }
      all = head + Array(repeating: 0, count: total - head.count - rest.count) + rest
    } else {
      guard head.count == total else { return nil }
      all = head
    }
    return all.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] } + tail
  }
}

/// A CIDR network such as 10.0.0.0/8 or fc00::/7; a bare address is a /32 or /128.
public struct IPNetwork: Hashable, Sendable {
  public var address: IPAddress
  public var prefixLength: Int

  public init?(cidr: String) {
    let parts = cidr.split(separator: "/", maxSplits: 1)
    guard let first = parts.first, let address = IPAddress(String(first)) else { return nil }
    let maxBits = address.bytes.count * 8
    if parts.count == 2 {
      guard let bits = Int(parts[1]), (0...maxBits).contains(bits) else { return nil }
      prefixLength = bits
    } else {
      prefixLength = maxBits
    }
    self.address = address
  }

  public func contains(_ other: IPAddress) -> Bool {
    guard other.bytes.count == address.bytes.count else { return false }
    var bits = prefixLength
    for i in 0..<address.bytes.count where bits > 0 {
      let take = min(8, bits)
      let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - take))
      if address.bytes[i] & mask != other.bytes[i] & mask { return false }
      bits -= take
    }
    return true
  }
}

extension Character {
  fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
