import CLibCrypto

/// SHA-256 through OpenSSL's libcrypto.
public enum Digest {
  /// The SHA-256 of `bytes`, as 64 lowercase hex digits. A few milliseconds per megabyte: call it off the
  /// cooperative pool for large inputs.
  public static func sha256Hex(_ bytes: [UInt8]) -> String {
    var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
    bytes.withUnsafeBufferPointer { src in _ = SHA256(src.baseAddress, src.count, &digest) }
    let digits = Array("0123456789abcdef".utf8)
    var hex = [UInt8]()
    hex.reserveCapacity(digest.count * 2)
    for byte in digest {
      hex.append(digits[Int(byte >> 4)])
      hex.append(digits[Int(byte & 0x0f)])
    }
    return String(decoding: hex, as: UTF8.self)
  }
}
