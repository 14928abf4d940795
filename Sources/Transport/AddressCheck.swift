import CCurlShim
import Glibc

/// Holds one curl transfer to an address policy, at two points: before curl opens each socket (after
/// DNS, for the first request and every redirect), so a refused address fails before a single packet
/// goes out (an unroutable 10.0.0.1 fails at once instead of waiting out the connect timeout); and after
/// connecting, before each request, with the address actually connected to, which also covers a reused
/// connection and anything curl connects through without opening a socket itself.
///
/// @unchecked Sendable: `blockedAddress` is written by the thread running the transfer and read by the
/// transfer's owner once it ended (CurlMulti's continuation orders the two).
public final class AddressCheck: @unchecked Sendable {
  /// Asked with the numeric text of an address (`10.0.0.1`, `::1`); false refuses it.
  private let permits: @Sendable (String) -> Bool
  /// The address refused, if one was.
  public private(set) var blockedAddress: String?

  public init(permits: @escaping @Sendable (String) -> Bool) {
    self.permits = permits
  }

  /// Installs both checks on `easy`. The check must live as long as the transfer (its owner keeps it).
  public func install(on easy: CurlEasy) {
    let userdata = Unmanaged.passUnretained(self).toOpaque()
    _ = thumbd_curl_setopt_opensocket_function(easy.handle, openCheckedSocket)
    _ = thumbd_curl_setopt_pointer(easy.handle, CURLOPT_OPENSOCKETDATA, userdata)
    _ = thumbd_curl_setopt_prereq_function(easy.handle, checkConnectedAddress)
    _ = thumbd_curl_setopt_pointer(easy.handle, CURLOPT_PREREQDATA, userdata)
  }

  fileprivate func allows(_ text: String?, otherwise shown: @autoclosure () -> String) -> Bool {
    if let text, permits(text) { return true }
    blockedAddress = text ?? shown()
    return false
  }
}

private let openCheckedSocket: thumbd_curl_opensocket_callback = { userdata, _, address in
  let check = Unmanaged<AddressCheck>.fromOpaque(userdata!).takeUnretainedValue()
  guard let address else { return -1 }
  let text = ipText(family: address.pointee.family, address: &address.pointee.addr)
  guard check.allows(text, otherwise: "an address of family \(address.pointee.family)") else {
    return -1  // CURL_SOCKET_BAD: curl gives up on this address (CURLE_COULDNT_CONNECT)
  }
  return socket(address.pointee.family, address.pointee.socktype, address.pointee.protocol)
}

private let checkConnectedAddress: thumbd_curl_prereq_callback = { userdata, primaryIP, _, _, _ in
  let check = Unmanaged<AddressCheck>.fromOpaque(userdata!).takeUnretainedValue()
  let text = primaryIP.map { String(cString: $0) } ?? ""
  return check.allows(text, otherwise: text) ? thumbd_curl_prereq_ok() : thumbd_curl_prereq_abort()
}

/// The numeric text of an IPv4 or IPv6 socket address.
private func ipText(family: Int32, address: UnsafeMutablePointer<sockaddr>) -> String? {
  var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
  let written: UnsafePointer<CChar>?
  switch family {
  case AF_INET:
    written = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
      withUnsafePointer(to: &v4.pointee.sin_addr) { inet_ntop(AF_INET, $0, &buffer, socklen_t(buffer.count)) }
    }
  case AF_INET6:
    written = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
      withUnsafePointer(to: &v6.pointee.sin6_addr) {
        inet_ntop(AF_INET6, $0, &buffer, socklen_t(buffer.count))
      }
    }
  default:
    return nil
  }
  guard written != nil else { return nil }
  return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
