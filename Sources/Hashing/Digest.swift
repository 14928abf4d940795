import CLibCrypto

/// SHA-256 through OpenSSL's libcrypto.
public enum Digest {
  /// The SHA-256 of `bytes`, as 64 lowercase hex digits. A few milliseconds per megabyte: call it off the
  /// cooperative pool for large inputs.
  public static func sha256Hex(_ bytes: [UInt8]) -> String {
    var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
    bytes.withUnsafeBufferPointer { src in _ = SHA256(src.baseAddress, src.count, &digest) }
    return hex(digest)
  }

  /// `bytes` as lowercase hex digits.
  static func hex(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var hex = [UInt8]()
    hex.reserveCapacity(bytes.count * 2)
    for byte in bytes {
      hex.append(digits[Int(byte >> 4)])
      hex.append(digits[Int(byte & 0x0f)])
    }
    return String(decoding: hex, as: UTF8.self)
  }
}

/// A SHA-256 fed piece by piece as the bytes arrive (a download's chunks), so that the digest is ready
/// when the last piece is, instead of a pass over the whole after it. Owns its libcrypto context and
/// frees it once. Not for two threads at once.
public final class StreamingSHA256 {
  private let context: OpaquePointer
  /// The digest, once taken: the context is spent then, and asking again gives the same.
  private var digest: String?

  /// Nil when libcrypto cannot make a context (out of memory).
  public init?() {
    guard let context = EVP_MD_CTX_new() else { return nil }
    guard EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1 else {
      EVP_MD_CTX_free(context)
      return nil
    }
    self.context = context
  }

  deinit {
    EVP_MD_CTX_free(context)
  }

  /// Feeds `bytes`; nothing once the digest was taken.
  public func update(_ bytes: UnsafeRawBufferPointer) {
    guard digest == nil, let base = bytes.baseAddress, !bytes.isEmpty else { return }
    _ = EVP_DigestUpdate(context, base, bytes.count)
  }

  /// The digest of everything fed before the first call, as 64 lowercase hex digits.
  public func hexDigest() -> String {
    if let digest { return digest }
    var bytes = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
    var length: UInt32 = 0
    _ = EVP_DigestFinal_ex(context, &bytes, &length)
    let hex = Digest.hex(Array(bytes.prefix(Int(length))))
    digest = hex
    return hex
  }
}
