import Hashing

/// The console's one password, kept only as an HMAC-SHA256 under a key drawn at start: the plain text
/// is not held after `init`, and a guess is compared by its MAC, byte by byte to the end whatever the
/// first difference, so the time an answer takes says nothing of how close the guess was.
public struct Password: Sendable {
  private let key: [UInt8]
  private let mac: [UInt8]

  public init(_ plain: String) {
    key = Secrets.randomBytes(32)
    mac = Digest.hmacSHA256(key: key, message: Array(plain.utf8))
  }

  public func matches(_ guess: String) -> Bool {
    Secrets.equalInConstantTime(Digest.hmacSHA256(key: key, message: Array(guess.utf8)), mac)
  }
}

enum Secrets {
  /// From the system's CSPRNG (getrandom(2) on Linux).
  static func randomBytes(_ count: Int) -> [UInt8] {
    var generator = SystemRandomNumberGenerator()
    return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
  }

  /// 32 random bytes as 64 hex digits: session ids and CSRF tokens.
  static func token() -> String {
    randomBytes(32).map { byte in
      let digits = Array("0123456789abcdef")
      return String([digits[Int(byte >> 4)], digits[Int(byte & 15)]])
    }.joined()
  }

  static func equalInConstantTime(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    var difference: UInt8 = 0
    for index in a.indices { difference |= a[index] ^ b[index] }
    return difference == 0
  }

  static func equalInConstantTime(_ a: String, _ b: String) -> Bool {
    equalInConstantTime(Array(a.utf8), Array(b.utf8))
  }
}
