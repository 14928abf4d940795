public import Fetch
import Foundation
public import ThumbCore

/// Everything `thumbd worker` is told on its command line or in THUMBD_* variables.
public struct WorkerConfig: Sendable {
  public var databaseURL: String
  public var storageURL: String
  public var concurrency: Int = 2
  public var memoryBudget: Int = 256 * 1024 * 1024
  public var drain = false
  public var leaseSeconds: Double = 60
  public var fetch = FetchLimits()
  public var maxPixels = 100_000_000
  public var addressGuard = AddressGuard()
  public var retryPolicy = RetryPolicy()
  /// Idle slots poll at most this often (LISTEN/NOTIFY wake-up comes with the queue issue).
  public var maxPollInterval: Double = 1.0
  public var workerID: String

  public init(databaseURL: String, storageURL: String) {
    self.databaseURL = databaseURL
    self.storageURL = storageURL
    let host = ProcessInfo.processInfo.hostName
    let tag = String(UInt32.random(in: 0...UInt32.max), radix: 36)
    workerID = "\(host):\(getpid()):\(tag)"
  }
}
