public import Glibc

/// The numeric text of an IPv4 or IPv6 socket address.
public func ipText(family: Int32, address: UnsafeMutablePointer<sockaddr>) -> String? {
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
