public import Blocking
import Foundation
public import ThumbCore
public import Transport

/// How `--storage` and the `--s3-*` options become a store.
public struct StorageSettings: Sendable {
  public var url: String
  public var s3Endpoint: String?
  public var s3Region = "us-east-1"
  public var s3PathStyle = false
  public var s3Credentials: S3Credentials?

  public init(url: String) { self.url = url }
}

public enum StorageURL {
  /// Checks the settings without opening anything: the message of the first problem, or nil.
  public static func problem(_ settings: StorageSettings) -> String? {
    let text = settings.url
    guard let scheme = text.split(separator: ":").first?.lowercased() else { return "is not a URL" }
    switch scheme {
    case "file":
      guard let url = URL(string: text), url.path.hasPrefix("/") else {
        return "needs an absolute path: file:///dir"
      }
      return nil
    case "s3":
      if case .failure(let error) = location(settings) { return error.description }
      if settings.s3Credentials == nil {
        return "s3:// storage needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
      }
      return nil
    default:
      return "the scheme '\(scheme)' is not supported: use file:///dir or s3://bucket/prefix"
    }
  }

  /// Opens the store `--storage` names. S3 requests run on `multi`, file writes on `pool`.
  public static func open(
    _ settings: StorageSettings, pool: BlockingPool, multi: CurlMulti
  ) throws(JobError) -> any ThumbnailStore {
    if let problem = problem(settings) {
      throw JobError(.storageRefused, "--storage '\(settings.url)': \(problem)")
    }
    if settings.url.lowercased().hasPrefix("s3:") {
      guard case .success(let location) = location(settings), let credentials = settings.s3Credentials else {
        throw JobError(.storageRefused, "--storage '\(settings.url)': invalid")
      }
      return S3Store(location: location, credentials: credentials, multi: multi)
    }
    return LocalDirectoryStore(root: URL(fileURLWithPath: URL(string: settings.url)!.path), pool: pool)
  }

  static func location(_ settings: StorageSettings) -> Result<S3Location, S3Location.LocationError> {
    S3Location.parse(
      settings.url, endpoint: settings.s3Endpoint, region: settings.s3Region, pathStyle: settings.s3PathStyle)
  }
}
