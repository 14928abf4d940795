import Fetch
import Foundation
import Logging
import Queue
import ThumbCore

extension WorkerOption {
  /// Every option of `thumbd worker`, in the order `config check` and the README list them.
  public static let all: [WorkerOption] = [
    WorkerOption(
      "database-url", .value(placeholder: "URL"), environment: "DATABASE_URL", secret: true,
      default: "required",
      help: "PostgreSQL as a libpq URI or conninfo string",
      apply: { value, settings throws(OptionError.Problem) in
        guard !value.trimmingCharacters(in: .whitespaces).isEmpty else { throw .init("is empty") }
        settings.databaseURL = value
      }, render: { $0.databaseURL }),
    WorkerOption(
      "listen-database-url", .value(placeholder: "URL"), secret: true, default: "--database-url",
      help:
        "the connection that listens for new jobs (and for events, with --webhook-url): direct to PostgreSQL or through a session pool, when --database-url goes through a transaction pool, which loses LISTEN",
      apply: { value, settings throws(OptionError.Problem) in
        guard !value.trimmingCharacters(in: .whitespaces).isEmpty else { throw .init("is empty") }
        settings.listenDatabaseURL = value
      }, render: { $0.listenDatabaseURL ?? "" }),
    WorkerOption(
      "storage", .value(placeholder: "URL"), default: "required",
      help:
        "where thumbnails go: `file:///abs/dir`, or `s3://bucket/prefix` with credentials in `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and optional `AWS_SESSION_TOKEN`",
      apply: { value, settings throws(OptionError.Problem) in
        guard value.hasPrefix("file:///") || value.hasPrefix("s3://") else {
          throw .init("'\(value)' is not file:///absolute/dir or s3://bucket/prefix")
        }
        settings.storageURL = value
      }, render: { $0.storageURL }),
    WorkerOption(
      "s3-endpoint", .value(placeholder: "URL"), default: "AWS's regional endpoint",
      help: "the S3 service's `http(s)://host[:port]`, for MinIO, R2, Ceph and other S3-compatible storage",
      apply: { value, settings throws(OptionError.Problem) in
        let lower = value.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://") else {
          throw .init("'\(value)' is not an http(s):// URL")
        }
        settings.s3Endpoint = value
      }, render: { $0.s3Endpoint ?? "" }),
    WorkerOption(
      "s3-region", .value(placeholder: "REGION"), default: "`AWS_REGION`, else us-east-1",
      help: "the region requests are signed for",
      apply: { value, settings throws(OptionError.Problem) in
        guard !value.isEmpty, value.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" }) else {
          throw .init("'\(value)' is not a region name such as eu-west-1")
        }
        settings.s3Region = value
      }, render: { $0.s3Region }),
    WorkerOption(
      "s3-path-style", .flag,
      help: "address objects as `ENDPOINT/BUCKET/KEY` instead of `BUCKET.ENDPOINT/KEY` (MinIO, Ceph)",
      apply: { value, settings throws(OptionError.Problem) in
        settings.s3PathStyle = try Read.bool(value)
      },
      render: { "\($0.s3PathStyle)" }),
    WorkerOption(
      "source-buckets", .value(placeholder: "LIST"), default: "none",
      help:
        "buckets whose `s3://BUCKET/KEY` originals may be read, comma-separated (a list in the file); read with the `--s3-*` settings and the `AWS_*` credentials",
      apply: { value, settings throws(OptionError.Problem) in
        let names = value.split(whereSeparator: { $0 == "," || $0 == " " }).map(String.init)
        for name in names {
          if let problem = S3Sources.problem(bucket: name) { throw .init(problem) }
        }
        settings.sourceBuckets = names
      }, render: { $0.sourceBuckets.joined(separator: ",") }),
    WorkerOption(
      "concurrency", .value(placeholder: "N"), default: "the number of cores",
      help: "jobs processed at once (1-256)",
      apply: { value, settings throws(OptionError.Problem) in
        settings.concurrency = try Read.int(value, 1...256)
      }, render: { "\($0.concurrency)" }),
    WorkerOption(
      "memory-budget", .value(placeholder: "SIZE"),
      help:
        "downloads in flight, originals held, and the predicted peak bytes of the jobs decoding at once; a download pauses and a job waits until they fit",
      apply: { value, settings throws(OptionError.Problem) in
        settings.memoryBudget = try Read.size(value)
      }, render: { Write.size($0.memoryBudget) }),
    WorkerOption(
      "drain", .flag,
      help: "exit 0 once no job is due now and none is running here; jobs waiting out a backoff stay queued",
      apply: { value, settings throws(OptionError.Problem) in settings.drain = try Read.bool(value) },
      render: { "\($0.drain)" }),
    WorkerOption(
      "lease-ttl", .value(placeholder: "SECONDS"),
      help: "lease length, renewed by heartbeats every third of it",
      apply: { value, settings throws(OptionError.Problem) in
        settings.leaseSeconds = try Read.seconds(value, atLeast: 1)
      }, render: { Write.number($0.leaseSeconds) }),
    WorkerOption(
      "fetch-timeout", .value(placeholder: "SECONDS"),
      help: "the whole fetch of one attempt, its retries included",
      apply: { value, settings throws(OptionError.Problem) in
        settings.fetch.totalTimeout = try Read.seconds(value, atLeast: 0, inclusive: false)
      }, render: { Write.number($0.fetch.totalTimeout) }),
    WorkerOption(
      "connect-timeout", .value(placeholder: "SECONDS"),
      help: "time to establish a connection to an origin (at most the fetch timeout)",
      apply: { value, settings throws(OptionError.Problem) in
        settings.fetch.connectTimeout = try Read.seconds(value, atLeast: 0, inclusive: false)
      }, render: { Write.number($0.fetch.connectTimeout) }),
    WorkerOption(
      "fetch-tries", .value(placeholder: "N"), help: "tries per attempt for transient download failures",
      apply: { value, settings throws(OptionError.Problem) in
        settings.fetch.retry.tries = try Read.int(value, 1...10)
      }, render: { "\($0.fetch.retry.tries)" }),
    WorkerOption(
      "max-download-bytes", .value(placeholder: "SIZE"),
      help: "largest original in bytes (decoded bytes, for compressed bodies)",
      apply: { value, settings throws(OptionError.Problem) in
        settings.fetch.maxBytes = try Read.size(value)
      }, render: { Write.size($0.fetch.maxBytes) }),
    WorkerOption(
      "max-spool-bytes", .value(placeholder: "SIZE"),
      help:
        "disk for videos over the download limit from origins that do not answer ranges, downloaded to the spool and read in parts from there; 0 = none",
      apply: { value, settings throws(OptionError.Problem) in
        settings.maxSpoolBytes = try Read.size(value, positive: false)
      }, render: { Write.size($0.maxSpoolBytes) }),
    WorkerOption(
      "spool-dir", .value(placeholder: "DIR"), default: "`thumbd-spool` in the temporary directory",
      help: "where the spool's files go (unlinked as they are made: nothing is left behind)",
      apply: { value, settings throws(OptionError.Problem) in
        guard value.hasPrefix("/") else { throw .init("'\(value)' is not an absolute path") }
        settings.spoolDirectory = value
      }, render: { $0.effectiveSpoolDirectory }),
    WorkerOption(
      "max-pixels", .value(placeholder: "N"), help: "largest original in pixels, refused before decoding",
      apply: { value, settings throws(OptionError.Problem) in
        settings.maxPixels = try Read.int(value, 1...Int(Int32.max) * 4)
      }, render: { "\($0.maxPixels)" }),
    WorkerOption(
      "allow-hosts", .value(placeholder: "LIST"), default: "none",
      help: "hosts or CIDRs exempt from the private-network block, comma-separated",
      apply: { value, settings throws(OptionError.Problem) in
        settings.addressPolicy = try Read.allowList(value)
        settings.allowHosts = value
      }, render: { $0.allowHosts }),
    WorkerOption(
      "original-cache", .value(placeholder: "SIZE"), default: "an eighth of the memory budget",
      help:
        "recent originals kept for other jobs of the same URL, counted in the budget and evicted when a decode needs the room; 0 = off",
      apply: { value, settings throws(OptionError.Problem) in
        settings.originalCacheBytes = try Read.size(value, positive: false)
      }, render: { Write.size($0.effectiveOriginalCacheBytes) }),
    WorkerOption(
      "lease-siblings", .value(placeholder: "N"),
      help: "other ready jobs naming an already leased URL taken along per lease",
      apply: { value, settings throws(OptionError.Problem) in
        settings.leaseSiblings = try Read.int(value, 0...1000)
      }, render: { "\($0.leaseSiblings)" }),
    WorkerOption(
      "lease-batch", .value(placeholder: "N"), default: "free slots, at most 100",
      help: "jobs claimed per lease statement",
      apply: { value, settings throws(OptionError.Problem) in
        settings.leaseBatch = try Read.int(value, 1...1000)
      }, render: { "\($0.effectiveLeaseBatch)" }),
    WorkerOption(
      "poll-interval", .value(placeholder: "SECONDS"),
      help:
        "look for due jobs this often without a notification (lost notifications, scheduled and backed-off jobs)",
      apply: { value, settings throws(OptionError.Problem) in
        settings.pollInterval = try Read.seconds(value, atLeast: 0, inclusive: false)
      }, render: { Write.number($0.pollInterval) }),
    WorkerOption(
      "prepared-statements", .value(placeholder: "on|off"), default: "on",
      help:
        "prepare the hot statements once per connection; `off` behind a pooler in transaction mode that does not track them (PgBouncer before 1.21)",
      apply: { value, settings throws(OptionError.Problem) in
        settings.preparedStatements = try Read.bool(value)
      }, render: { $0.preparedStatements ? "on" : "off" }),
    WorkerOption(
      "database-timeout", .value(placeholder: "SECONDS"),
      help:
        "a database silent this long (keepalives unanswered, data unacknowledged, a connection attempt to one host) is taken for gone and connected to again; whole seconds, at least 2",
      apply: { value, settings throws(OptionError.Problem) in
        let seconds = try Read.seconds(value, atLeast: 2)
        guard seconds == seconds.rounded(), seconds <= 3600 else {
          throw .init("'\(value)' is not a whole number of seconds from 2 to 3600")
        }
        settings.databaseLiveness = DatabaseLiveness(seconds: Int(seconds))
      }, render: { "\($0.databaseLiveness.seconds)" }),
    WorkerOption(
      "shutdown-grace", .value(placeholder: "SECONDS"),
      help: "time running jobs get to finish after SIGTERM before they are handed back",
      apply: { value, settings throws(OptionError.Problem) in
        settings.shutdownGrace = try Read.seconds(value, atLeast: 0)
      }, render: { Write.number($0.shutdownGrace) }),
    WorkerOption(
      "retention", .value(placeholder: "DURATION"),
      help: "delete finished jobs (and their variant rows) older than this, e.g. 7d or 12h; 0 keeps them",
      apply: { value, settings throws(OptionError.Problem) in
        settings.retentionSeconds = try Read.duration(value)
      }, render: { Write.duration($0.retentionSeconds) }),
    WorkerOption(
      "event-retention", .value(placeholder: "DURATION"),
      help: "delete completion events (thumbs.events) older than this, e.g. 30d; 0 keeps them",
      apply: { value, settings throws(OptionError.Problem) in
        settings.eventRetentionSeconds = try Read.duration(value)
      }, render: { Write.duration($0.eventRetentionSeconds) }),
    WorkerOption(
      "erase-grace", .value(placeholder: "SECONDS"),
      help:
        "a storage object nothing names any more (a forgotten photo's, a pruned job's) is deleted this long after, unless something names it again meanwhile",
      apply: { value, settings throws(OptionError.Problem) in
        settings.eraseGraceSeconds = try Read.seconds(value, atLeast: 0)
      }, render: { Write.number($0.eraseGraceSeconds) }),
    WorkerOption(
      "gc-interval", .value(placeholder: "SECONDS"),
      help: "run a collection pass (deleting such objects from storage) this often; 0 = never on this worker",
      apply: { value, settings throws(OptionError.Problem) in
        settings.gcIntervalSeconds = try Read.seconds(value, atLeast: 0)
      }, render: { Write.number($0.gcIntervalSeconds) }),
    WorkerOption(
      "webhook-url", .value(placeholder: "URL"), default: "none",
      help: "POST every completion event here, signed (Standard Webhooks); needs --webhook-secret",
      apply: { value, settings throws(OptionError.Problem) in
        guard let components = URLComponents(string: value), ["http", "https"].contains(components.scheme),
          components.host?.isEmpty == false
        else { throw .init("'\(SourceURL.shown(value))' is not an http or https URL") }
        settings.webhookURL = value
      }, render: { $0.webhookURL.map(SourceURL.redacted) ?? "none" }),
    WorkerOption(
      "webhook-secret", .value(placeholder: "whsec_..."), secret: true, default: "none",
      help:
        "the key webhooks are signed with; several (space-separated) sign each delivery with each, for rotation",
      apply: { value, settings throws(OptionError.Problem) in
        do {
          settings.webhookSecrets = try WebhookSecrets(parsing: value)
        } catch {
          throw .init("\(error)")
        }
      }, render: { $0.webhookSecrets?.masked ?? "none" }),
    WorkerOption(
      "webhook-allow-hosts", .value(placeholder: "LIST"), default: "none",
      help: "hosts or CIDRs a webhook URL may reach despite the private-network block, comma-separated",
      apply: { value, settings throws(OptionError.Problem) in
        settings.webhookAddressPolicy = try Read.allowList(value)
        settings.webhookAllowHosts = value
      }, render: { $0.webhookAllowHosts }),
    WorkerOption(
      "public-url-base", .value(placeholder: "URL"), default: "none",
      help:
        "where the thumbnails are served from: events and webhooks give each its `url`, this followed by its storage key",
      apply: { value, settings throws(OptionError.Problem) in
        if value.isEmpty || value.lowercased() == "none" {
          settings.publicURLBase = nil
          return
        }
        guard let components = URLComponents(string: value),
          ["http", "https"].contains(components.scheme?.lowercased()), components.host?.isEmpty == false,
          components.query == nil, components.fragment == nil
        else { throw .init("'\(SourceURL.shown(value))' is not an http or https URL without a query") }
        settings.publicURLBase = value.hasSuffix("/") ? value : value + "/"
      }, render: { $0.publicURLBase ?? "none" }),
    WorkerOption(
      "http-address", .value(placeholder: "HOST:PORT"),
      help: "where `/healthz`, `/readyz`, `/metrics` and `/debug/jobs` are served; `off` disables",
      apply: { value, settings throws(OptionError.Problem) in
        if value.lowercased() == "off" {
          settings.httpAddress = nil
          return
        }
        guard let address = HTTPAddress(value) else { throw .init("'\(value)' is not HOST:PORT or off") }
        settings.httpAddress = address
      }, render: { $0.httpAddress?.description ?? "off" }),
    WorkerOption(
      "log-format", .value(placeholder: "text|json"), help: "text lines, or one JSON object per line",
      apply: { value, settings throws(OptionError.Problem) in
        guard let format = WorkerConfig.LogFormat(rawValue: value.lowercased()) else {
          throw .init("'\(value)' is not text or json")
        }
        settings.logFormat = format
      }, render: { $0.logFormat.rawValue }),
    WorkerOption(
      "log-level", .value(placeholder: "LEVEL"),
      help: "trace, debug, info, notice, warning, error or critical",
      apply: { value, settings throws(OptionError.Problem) in
        guard let level = Logger.Level(rawValue: value.lowercased()) else {
          throw .init("'\(value)' is not one of trace, debug, info, notice, warning, error, critical")
        }
        settings.logLevel = level
      }, render: { $0.logLevel.rawValue }),
  ]
}
