import Foundation
import Storage
import Testing
import ThumbCore
import Transport

/// An object read back from the test S3 server, as any client sees it.
struct StoredObject {
  var status: Int
  var bytes: [UInt8]
  /// Response headers, names in lower case.
  var headers: [String: String]
}

extension S3TestServer {
  /// `s3://BUCKET/PREFIX` on this server, path style, with the main credentials.
  func store(
    prefix: String, bucket: String? = nil, endpoint: String? = nil, pathStyle: Bool = true,
    credentials: S3Credentials? = nil, timeout: Double = 30,
    retry: FetchRetryPolicy = FetchRetryPolicy(tries: 4, baseSeconds: 0.25)
  ) throws -> S3Store {
    let location = try S3Location.parse(
      "s3://\(bucket ?? self.bucket)/\(prefix)", endpoint: endpoint ?? self.endpoint, region: "us-east-1",
      pathStyle: pathStyle
    ).get()
    return S3Store(
      location: location, credentials: credentials ?? self.credentials, multi: CurlMulti.shared,
      timeout: timeout, retry: retry)
  }

  var credentials: S3Credentials { S3Credentials(accessKey: accessKey, secretKey: secretKey) }

  /// The assumed role's credentials and token; nil when scripts/s3-temp.sh did not export them.
  var sessionCredentials: S3Credentials? {
    guard let sessionAccessKey, let sessionSecretKey, let sessionToken else { return nil }
    return S3Credentials(accessKey: sessionAccessKey, secretKey: sessionSecretKey, sessionToken: sessionToken)
  }

  /// The server's port (moto listens on loopback).
  var port: Int { Int(endpoint.split(separator: ":").last ?? "") ?? 0 }

  /// A signed GET of `name` (the object's full name in the bucket): status, exact bytes and headers.
  func download(_ name: String) throws -> StoredObject {
    let folder = try makeTemporaryDirectory()
    defer { try? FileManager.default.removeItem(at: folder) }
    let body = folder.appendingPathComponent("body")
    let head = folder.appendingPathComponent("headers")
    let answer = try curl(["-o", body.path, "-D", head.path], key: name)
    var headers: [String: String] = [:]
    let lines = (try? String(contentsOf: head, encoding: .utf8)) ?? ""
    for line in lines.split(separator: "\r\n") {
      guard let colon = line.firstIndex(of: ":") else { continue }
      headers[line[..<colon].lowercased()] = line[line.index(after: colon)...]
        .trimmingCharacters(in: .whitespaces)
    }
    let bytes = (try? Data(contentsOf: body)).map { [UInt8]($0) } ?? []
    return StoredObject(status: answer.status, bytes: bytes, headers: headers)
  }
}

/// Tests/Support/s3-faults.py in front of the test S3 server: forwards every request unchanged (Host
/// included, so signatures still verify) unless a queued fault answers it instead, and logs them all.
final class S3FaultProxy: @unchecked Sendable {
  let helper: HelperProcess
  let port: Int

  struct Seen: Sendable {
    var method: String
    var path: String
    /// Header names in lower case; Authorization is never recorded.
    var headers: [String: String]
    var signed: Bool
    /// "forwarded 200", "fault 503", "reset".
    var outcome: String
  }

  init(upstream: String) throws {
    helper = try HelperProcess(
      "/usr/bin/env",
      [
        "python3", TestDatabase.repoRoot.appendingPathComponent("Tests/Support/s3-faults.py").path,
        "--upstream", upstream,
      ])
    port = try helper.announcedPort()
  }

  /// The endpoint to give thumbd instead of the server's.
  var endpoint: String { "http://127.0.0.1:\(port)" }

  /// Queues a fault (s3-faults.py's JSON form).
  func inject(_ fault: [String: any Sendable]) throws {
    let json = String(decoding: try JSONSerialization.data(withJSONObject: fault), as: UTF8.self)
    let answer = try curl(["-m", "5", "-X", "POST", "--data-binary", json, "\(endpoint)/_faults"])
    guard answer.status == 200 else { throw CocoaError(.fileWriteUnknown) }
  }

  /// Drops the queued faults and the log.
  func clear() throws {
    let answer = try curl(["-m", "5", "-X", "POST", "\(endpoint)/_faults/clear"])
    guard answer.status == 200 else { throw CocoaError(.fileWriteUnknown) }
  }

  /// Every request seen since the last clear, in order.
  func log() throws -> [Seen] {
    let answer = try curl(["-m", "5", "\(endpoint)/_faults/log"])
    guard answer.status == 200,
      let entries = try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [[String: Any]]
    else {
      throw CocoaError(.fileReadCorruptFile)
    }
    return entries.map { entry in
      let headers = (entry["headers"] as? [String: String]) ?? [:]
      return Seen(
        method: entry["method"] as? String ?? "", path: entry["path"] as? String ?? "",
        headers: Dictionary(headers.map { ($0.key.lowercased(), $0.value) }) { $1 },
        signed: entry["signed"] as? Bool ?? false, outcome: entry["outcome"] as? String ?? "")
    }
  }

  /// The requests seen with `method` whose path contains `path`.
  func requests(_ method: String, _ path: String = "") throws -> [Seen] {
    try log().filter { $0.method == method && (path.isEmpty || $0.path.contains(path)) }
  }

}

/// Random bytes and their content-addressed key (`ab/cd/<sha256>.jpg`), as the worker makes them.
func contentAddressedObject(size: Int = 20_000) -> (key: String, bytes: [UInt8]) {
  var generator = SystemRandomNumberGenerator()
  let bytes = (0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) }
  return (StorageKey.contentAddressed(bytes, fileExtension: "jpg"), bytes)
}
