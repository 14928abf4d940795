public import Fetch
import Foundation
public import Logging
public import Queue
public import Storage
public import ThumbCore

/// Everything `thumbd worker` is configured with, in one value: the worker's own settings and the
/// process around it (logging, the HTTP endpoint). The command builds it with `WorkerConfig.resolve`
/// from flags, `THUMBD_*` variables, a YAML file and defaults (`WorkerOption.all` says how, one row per
/// option); the services read it as it is, and the pure schedules take their settings from it
/// (`WorkerConfig+Schedules.swift`).
public struct WorkerConfig: Sendable {
  public var databaseURL: String
  /// Where the listening connection goes when not to `databaseURL` (which may be a transaction pool,
  /// where LISTEN is lost): direct, or a session pool.
  public var listenDatabaseURL: String?
  /// The listening connection's URL.
  public var listenURL: String { listenDatabaseURL ?? databaseURL }
  public var storageURL: String
  /// For `s3://` storage: `--s3-endpoint` (nil: AWS), `--s3-region`, `--s3-path-style`, and the
  /// credentials from `AWS_*`.
  public var s3Endpoint: String?
  public var s3Region = "us-east-1"
  public var s3PathStyle = false
  public var s3Credentials: S3Credentials?

  public var storageSettings: StorageSettings {
    var settings = StorageSettings(url: storageURL)
    settings.s3Endpoint = s3Endpoint
    settings.s3Region = s3Region
    settings.s3PathStyle = s3PathStyle
    settings.s3Credentials = s3Credentials
    return settings
  }
  /// The buckets `s3://` originals may be read from (`--source-buckets`), with the storage's endpoint,
  /// region, addressing and credentials.
  public var sourceBuckets: [String] = []

  /// How `s3://` originals are read; nil when no bucket is named (they are refused).
  public var s3Sources: S3Sources? {
    guard let first = sourceBuckets.first else { return nil }
    // The endpoint as the storage reads it (scheme://host[:port], no path).
    let endpoint = try? S3Location.parse(
      "s3://\(first)", endpoint: s3Endpoint, region: s3Region, pathStyle: s3PathStyle
    ).get().endpoint
    return S3Sources(
      buckets: Set(sourceBuckets), endpoint: endpoint ?? s3Endpoint, region: s3Region,
      pathStyle: s3PathStyle, credentials: s3Credentials)
  }
  public var concurrency: Int = 2
  public var memoryBudget: Int = 256 * 1024 * 1024
  public var drain = false
  public var leaseSeconds: Double = 60
  public var fetch = FetchLimits()
  /// How long a cached original is used without revalidating. Its size is `originalCacheBytes`.
  public var originals = OriginalSource.Settings()
  /// Bytes of recent originals kept for other jobs of the same URL (`--original-cache`); nil: an eighth
  /// of `memoryBudget`. Cached originals count against the budget like every other original, and are
  /// evicted when a decode first in line lacks the room.
  public var originalCacheBytes: Int?

  public var effectiveOriginalCacheBytes: Int { originalCacheBytes ?? memoryBudget / 8 }
  /// Where a video over `fetch.maxBytes` from an origin that does not answer ranges is downloaded to
  /// (`--spool-dir`); nil: the system's temporary directory, `thumbd-spool` in it.
  public var spoolDirectory: String?
  /// The disk the spool may use at once, and so the largest video it takes (`--max-spool-bytes`; 0:
  /// no spool, such a video is `too_large`).
  public var maxSpoolBytes = 4 << 30

  public var effectiveSpoolDirectory: String {
    spoolDirectory ?? (NSTemporaryDirectory() as NSString).appendingPathComponent("thumbd-spool")
  }
  /// Ready jobs for URLs a lease already names that come along with it (docs/fetching.md).
  public var leaseSiblings = 32
  public var maxPixels = 100_000_000
  public var addressPolicy = AddressPolicy()
  /// The allow list as written (`--allow-hosts`), for `config check`.
  public var allowHosts = ""
  public var retryPolicy = RetryPolicy()
  /// An idle worker looks for due jobs this often even without a notification: the fallback for lost
  /// notifications (reconnects, PgBouncer) and the way scheduled and backed-off jobs are found.
  public var pollInterval: Double = 1.0
  /// Prepare the hot statements once per connection (`--prepared-statements`); off behind PgBouncer in
  /// transaction mode before 1.21 (docs/operations.md, "PgBouncer").
  public var preparedStatements = true
  /// How long the database may stay silent (keepalives unanswered, data unacknowledged, a connection
  /// attempt) before a connection is given up and made again (Queue's DatabaseLiveness).
  public var databaseLiveness = DatabaseLiveness.standard
  /// Jobs claimed per lease statement; nil: as many as there are free slots, at most 100.
  public var leaseBatch: Int?
  /// After SIGTERM, running jobs get this long to finish before they are handed back.
  public var shutdownGrace: Double = 25
  /// Finished jobs older than this are deleted (with their variant rows); 0 keeps them forever.
  public var retentionSeconds: Double = 7 * 24 * 3600
  /// Completion events older than this are deleted; 0 keeps them forever. Longer than the jobs' by
  /// default: a consumer that was down for days still finds what happened.
  public var eventRetentionSeconds: Double = 30 * 24 * 3600
  /// A storage object nothing live names is deleted this long after it became a candidate (forgotten,
  /// pruned), unless named again meanwhile (migrations/0013).
  public var eraseGraceSeconds: Double = 300
  /// How often this worker runs a collection pass; 0: never (other workers of the fleet do).
  public var gcIntervalSeconds: Double = 60
  /// Where every completion event is POSTed (Standard Webhooks); nil: no webhooks.
  public var webhookURL: String?
  /// The keys deliveries are signed with (required with a webhook URL).
  public var webhookSecrets: WebhookSecrets?
  /// Hosts or CIDRs a webhook URL may reach despite the private-network block.
  public var webhookAddressPolicy = AddressPolicy()
  public var webhookAllowHosts = ""
  /// Where the thumbnails are served from: events give each one's `url`, this followed by its storage
  /// key (with a slash between them when this does not end in one). nil: no `url`.
  public var publicURLBase: String?
  /// How deliveries are claimed, sent and retried.
  public var webhookDelivery = WebhookDeliverySettings()
  /// How often the keeper expires stale worker rows and prunes finished jobs.
  public var housekeepingInterval: Double = 60
  public var workerID: String
  /// Where /healthz, /readyz and /metrics are served; nil: not served (the library's default; the
  /// command's is 0.0.0.0:9464).
  public var httpAddress: HTTPAddress?
  /// How often the keeper counts the live jobs for the queue gauges (and so checks the database).
  public var queueSampleInterval: Double = 5

  public var effectiveLeaseBatch: Int { max(1, min(leaseBatch ?? 100, concurrency)) }
  /// Jobs leased beyond `concurrency`: each waits for a slot while its original downloads into the
  /// original cache, so that a freed slot goes straight to decoding (docs/benchmarks/scaling.md).
  /// Not an option: one is enough to hide a download shorter than a render.
  public var leaseAhead = 1
  /// None with the original cache off: a prefetched original would have nowhere to wait.
  public var effectiveLeaseAhead: Int { effectiveOriginalCacheBytes > 0 ? leaseAhead : 0 }

  public var logFormat: LogFormat = .text
  public var logLevel: Logger.Level = .info
  /// The YAML file the settings came from, if any (`--config`, `THUMBD_CONFIG`).
  public var configFile: String?

  public enum LogFormat: String, Sendable, CaseIterable {
    case text, json
  }

  /// The command's defaults, before any flag, variable or file: `databaseURL` and `storageURL` are
  /// empty (both are required), concurrency is the number of cores, the HTTP endpoint on port 9464.
  public init() {
    self.init(databaseURL: "", storageURL: "")
    concurrency = ProcessInfo.processInfo.activeProcessorCount
    httpAddress = HTTPAddress(host: "0.0.0.0", port: 9464)
  }

  /// Strings that must never appear in a log line or in `config check`: the database password, the S3
  /// secret key and session token.
  public var secrets: [String] {
    [DatabaseURL.password(in: databaseURL), listenDatabaseURL.flatMap(DatabaseURL.password(in:))].compactMap {
      $0
    }
      + (s3Credentials?.secrets ?? [])
  }

  /// The library's defaults (two jobs at once, no HTTP endpoint), for a worker embedded in a program.
  public init(databaseURL: String, storageURL: String) {
    self.databaseURL = databaseURL
    self.storageURL = storageURL
    let host = ProcessInfo.processInfo.hostName
    let tag = String(UInt32.random(in: 0...UInt32.max), radix: 36)
    workerID = "\(host):\(getpid()):\(tag)"
  }
}
