import Foundation
import Hashing

/// The keys webhooks are signed with, from `--webhook-secret`: one or more Standard Webhooks secrets
/// (`whsec_` + base64 of the key), separated by spaces or commas. Every delivery is signed with each of
/// them (the header lists one `v1,` signature per key), so a secret can be rotated without a gap: add
/// the new one, move the receiver to it, then drop the old one.
public struct WebhookSecrets: Sendable, Equatable {
  public let keys: [[UInt8]]

  public struct Refusal: Error, Equatable, CustomStringConvertible {
    public var description: String
  }

  public init(parsing text: String) throws(Refusal) {
    let parts = text.split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init)
    guard !parts.isEmpty else { throw Refusal(description: "no secret given (whsec_ followed by base64)") }
    var keys: [[UInt8]] = []
    for (index, part) in parts.enumerated() {
      guard part.hasPrefix("whsec_"), let key = Data(base64Encoded: String(part.dropFirst(6))), !key.isEmpty
      else {
        throw Refusal(description: "secret \(index + 1) is not whsec_ followed by base64")
      }
      keys.append([UInt8](key))
    }
    self.keys = keys
  }

  /// The `webhook-signature` header's value for one delivery attempt: `v1,<base64 HMAC-SHA256>` of
  /// `id.timestamp.body` under each key, space-separated.
  public func signature(id: String, timestamp: Int, body: [UInt8]) -> String {
    let signed = Array("\(id).\(timestamp).".utf8) + body
    return keys.map { "v1," + Data(Digest.hmacSHA256(key: $0, message: signed)).base64EncodedString() }
      .joined(separator: " ")
  }

  /// How `config check` shows them: never the key.
  public var masked: String { Array(repeating: "whsec_****", count: keys.count).joined(separator: " ") }
}
