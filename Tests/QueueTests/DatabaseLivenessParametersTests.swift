import Testing

@testable import Queue

/// The libpq settings one liveness bound comes to: a vanished host noticed within about the bound, idle
/// (keepalives) or sending (tcp_user_timeout), and each host of a multi-host URL tried for that long.
@Suite struct DatabaseLivenessParametersTests {
  func settings(_ seconds: Int) -> [String: String] {
    Dictionary(uniqueKeysWithValues: DatabaseLiveness(seconds: seconds).parameters.map { ($0.key, $0.value) })
  }

  @Test func theDefaultNoticesAVanishedHostWithinTenSeconds() {
    let standard = settings(DatabaseLiveness.standard.seconds)
    #expect(standard["connect_timeout"] == "10" && standard["tcp_user_timeout"] == "10000")
    #expect(standard["keepalives"] == "1")
    let idle = Int(standard["keepalives_idle"]!)!
    let interval = Int(standard["keepalives_interval"]!)!
    let count = Int(standard["keepalives_count"]!)!
    #expect(idle + interval * count == 10)
  }

  @Test(arguments: [2, 3, 7, 30, 120])
  func everyBoundKeepsItsKeepalivesWithinItAndAtLeastASecondApart(seconds: Int) {
    let s = settings(seconds)
    let idle = Int(s["keepalives_idle"]!)!
    let interval = Int(s["keepalives_interval"]!)!
    let count = Int(s["keepalives_count"]!)!
    #expect(idle >= 1 && interval >= 1 && count == 3)
    #expect(idle + interval * count <= max(seconds, 4))
    #expect(s["tcp_user_timeout"] == "\(seconds * 1000)" && s["connect_timeout"] == "\(seconds)")
  }

  @Test func lessThanTwoSecondsIsTwo() {
    #expect(DatabaseLiveness(seconds: 0).seconds == 2)
  }
}
