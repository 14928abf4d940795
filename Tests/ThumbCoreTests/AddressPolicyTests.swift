import Foundation
import Testing

@testable import ThumbCore

@Suite struct AddressPolicyTests {
  let guardDefault = AddressPolicy()

  @Test(arguments: [
    "127.0.0.1", "10.0.0.1", "172.16.5.4", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0",
    "::1", "::", "fe80::1", "fd00::5", "::ffff:127.0.0.1", "::ffff:169.254.169.254", "224.0.0.1",
  ])
  func blocksPrivateAndReservedAddresses(address: String) throws {
    let ip = try #require(IPAddress(address))
    #expect(!guardDefault.permits(address: ip, host: "example.com"))
  }

  @Test(arguments: ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "172.32.0.1"])
  func allowsPublicAddresses(address: String) throws {
    #expect(guardDefault.permits(address: try #require(IPAddress(address)), host: nil))
  }

  @Test func allowListExemptsHostsAndNetworks() throws {
    let allowing = try AddressPolicy(allowList: "127.0.0.1, 10.1.0.0/16 origin.internal")
    #expect(allowing.permits(address: IPAddress("127.0.0.1")!, host: "localhost"))
    #expect(allowing.permits(address: IPAddress("10.1.2.3")!, host: nil))
    #expect(!allowing.permits(address: IPAddress("10.2.0.1")!, host: nil))
    #expect(allowing.permits(address: IPAddress("192.168.0.9")!, host: "origin.internal"))
    #expect(throws: AddressPolicy.ParseError.self) { try AddressPolicy(allowList: "10.0.0.0/99") }
  }

  @Test func parsesAddressForms() {
    #expect(IPAddress("1.2.3") == nil)
    #expect(IPAddress("256.1.1.1") == nil)
    #expect(IPAddress("1::2::3") == nil)
    #expect(IPAddress("2001:db8::1")?.bytes.count == 16)
    #expect(IPAddress("::ffff:1.2.3.4")?.unmappedIPv4 == IPAddress("1.2.3.4"))
  }
}
