import CLibCrypto

extension Digest {
  /// HMAC-SHA256 of `message` under `key` (32 bytes), through OpenSSL's libcrypto.
  public static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
    var mac = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
    var length: UInt32 = 0
    key.withUnsafeBufferPointer { key in
      message.withUnsafeBufferPointer { message in
        _ = HMAC(
          EVP_sha256(), key.baseAddress, Int32(key.count), message.baseAddress, message.count, &mac, &length)
      }
    }
    return Array(mac.prefix(Int(length)))
  }
}
