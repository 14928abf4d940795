import Foundation
public import Logging

/// One JSON object per line on standard error: `ts`, `level`, `msg`, `logger`, then the metadata under
/// their own dotted keys (`job.id`, `worker.id`, ...), so log pipelines index them without parsing text.
/// Each line is written with one write(2), so lines from different threads never interleave.
public struct JSONLogHandler: LogHandler {
  public var metadata: Logger.Metadata = [:]
  public var logLevel: Logger.Level = .info
  public var metadataProvider: Logger.MetadataProvider?
  private let label: String
  private let output: @Sendable ([UInt8]) -> Void

  public init(label: String, output: @escaping @Sendable ([UInt8]) -> Void = JSONLogHandler.standardError) {
    self.label = label
    self.output = output
  }

  public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
    get { metadata[key] }
    set { metadata[key] = newValue }
  }

  public static let standardError: @Sendable ([UInt8]) -> Void = { line in
    line.withUnsafeBytes { buffer in
      var offset = 0
      while offset < buffer.count {
        let written = write(2, buffer.baseAddress! + offset, buffer.count - offset)
        if written <= 0 { return }
        offset += written
      }
    }
  }

  public func log(event: LogEvent) {
    var merged = metadata
    if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
    if let extra = event.metadata { merged.merge(extra) { $1 } }
    var line = "{\"ts\":\(Self.quoted(Self.timestamp())),\"level\":\(Self.quoted(event.level.rawValue))"
    line += ",\"msg\":\(Self.quoted(event.message.description)),\"logger\":\(Self.quoted(label))"
    for key in merged.keys.sorted() where !["ts", "level", "msg", "logger"].contains(key) {
      line += ",\(Self.quoted(key)):\(Self.json(merged[key]!))"
    }
    line += "}\n"
    output(Array(line.utf8))
  }

  static func json(_ value: Logger.Metadata.Value) -> String {
    switch value {
    case .string(let text): quoted(text)
    case .stringConvertible(let convertible): quoted(convertible.description)
    case .array(let items): "[" + items.map(json).joined(separator: ",") + "]"
    case .dictionary(let entries):
      "{" + entries.keys.sorted().map { "\(quoted($0)):\(json(entries[$0]!))" }.joined(separator: ",") + "}"
    }
  }

  /// A JSON string literal (RFC 8259: quote, backslash and control characters escaped).
  static func quoted(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
      switch scalar {
      case "\"": out += "\\\""
      case "\\": out += "\\\\"
      case "\n": out += "\\n"
      case "\r": out += "\\r"
      case "\t": out += "\\t"
      case let c where c.value < 0x20: out += String(format: "\\u%04x", c.value)
      default: out.unicodeScalars.append(scalar)
      }
    }
    return out + "\""
  }

  /// RFC 3339 in UTC with milliseconds.
  static func timestamp() -> String {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    var seconds = now.tv_sec
    var parts = tm()
    gmtime_r(&seconds, &parts)
    return String(
      format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
      parts.tm_hour, parts.tm_min, parts.tm_sec, now.tv_nsec / 1_000_000)
  }
}

/// Masks secrets (the database password, and those of any URL: a source URL's password or presigned
/// signature) in every message and metadata value before the wrapped handler sees them: a driver's
/// error text or a URL in metadata cannot leak one into the log.
public struct RedactingLogHandler<Wrapped: LogHandler>: LogHandler {
  public var wrapped: Wrapped
  public let secrets: [String]

  public init(_ wrapped: Wrapped, secrets: [String]) {
    self.wrapped = wrapped
    self.secrets = secrets
  }

  public var metadata: Logger.Metadata {
    get { wrapped.metadata }
    set { wrapped.metadata = newValue }
  }

  public var logLevel: Logger.Level {
    get { wrapped.logLevel }
    set { wrapped.logLevel = newValue }
  }

  public var metadataProvider: Logger.MetadataProvider? {
    get { wrapped.metadataProvider }
    set { wrapped.metadataProvider = newValue }
  }

  public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
    get { wrapped[metadataKey: key] }
    set { wrapped[metadataKey: key] = newValue }
  }

  public func log(event: LogEvent) {
    var event = event
    event.message = Logger.Message(stringLiteral: redacting(event.message.description, secrets: secrets))
    event.metadata = event.metadata.map { $0.mapValues(redact) }
    var handler = wrapped
    handler.metadata = handler.metadata.mapValues(redact)
    handler.log(event: event)
  }

  private func redact(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
    switch value {
    case .string(let text): .string(redacting(text, secrets: secrets))
    case .stringConvertible(let convertible): .string(redacting(convertible.description, secrets: secrets))
    case .array(let items): .array(items.map(redact))
    case .dictionary(let entries): .dictionary(entries.mapValues(redact))
    }
  }
}
