import Foundation
import Storage
import Yams

/// The outcome of reading the options: the settings, where each value came from, and every refused
/// value (all of them, not just the first, so one `config check` shows everything to fix).
public struct SettingsResolution: Sendable {
  public var settings: WorkerConfig
  public var sources: [String: SettingSource]
  public var errors: [OptionError]

  /// `key: value  # source`, one line per option, secrets masked: valid YAML that can be saved as a
  /// configuration file.
  public var report: [String] {
    WorkerOption.all.map { option in
      let value = option.display(settings)
      let quoted = value.isEmpty || value.contains(": ") || value.hasPrefix("*") ? "\"\(value)\"" : value
      return "\(option.key): \(quoted)  # \(sources[option.key]?.name ?? "default")"
    }
  }
}

extension WorkerConfig {
  /// Reads the options with the contract's precedence: flag > environment variable > file > default.
  /// `arguments` are the command line after the subcommand; the file is `--config` or `THUMBD_CONFIG`.
  public static func resolve(
    arguments: [String], environment: [String: String],
    readFile: ((String) throws -> String)? = nil
  ) -> SettingsResolution {
    let readFile = readFile ?? { try String(contentsOfFile: $0, encoding: .utf8) }
    var errors: [OptionError] = []
    let flags = parse(arguments: arguments, errors: &errors)
    var settings = WorkerConfig()
    settings.configFile = flags["config"] ?? environment["THUMBD_CONFIG"].flatMap { $0.isEmpty ? nil : $0 }
    var fileValues: [String: String] = [:]
    if let path = settings.configFile {
      let source: SettingSource = flags["config"] != nil ? .flag : .environment("THUMBD_CONFIG")
      do {
        fileValues = try readYAML(try readFile(path), path: path, errors: &errors)
      } catch {
        errors.append(OptionError(key: "config", source: source, message: "cannot read '\(path)': \(error)"))
      }
    }
    var sources: [String: SettingSource] = [:]
    for option in WorkerOption.all {
      let chosen: (String, SettingSource)? =
        flags[option.key].map { ($0, .flag) }
        ?? environment[option.environment].flatMap {
          $0.isEmpty ? nil : ($0, .environment(option.environment))
        }
        ?? fileValues[option.key].map { ($0, .file(settings.configFile ?? "")) }
      guard let (value, source) = chosen else {
        sources[option.key] = .default
        continue
      }
      sources[option.key] = source
      do {
        try option.apply(value, &settings)
      } catch {
        errors.append(OptionError(key: option.key, source: source, message: error.message))
      }
    }
    // The region falls back to the SDKs' variable; the credentials are only ever the SDKs' variables.
    if sources["s3-region"] == .default, let region = environment["AWS_REGION"], !region.isEmpty {
      settings.s3Region = region
      sources["s3-region"] = .environment("AWS_REGION")
    }
    settings.s3Credentials = S3Credentials.from(environment: environment)
    settings.checkTogether(sources: sources, errors: &errors)
    return SettingsResolution(settings: settings, sources: sources, errors: errors)
  }

  /// Rules that involve more than one option.
  private mutating func checkTogether(sources: [String: SettingSource], errors: inout [OptionError]) {
    for key in ["database-url", "storage"] where sources[key] == .default {
      let option = WorkerOption.named(key)!
      errors.append(
        OptionError(
          key: key, source: .default,
          message: "required: set --\(key), \(option.environment) or `\(key):` in the configuration file"))
    }
    if sources["storage"] != .default, let problem = StorageURL.problem(storageSettings) {
      errors.append(OptionError(key: "storage", source: sources["storage"]!, message: problem))
    }
    if !sourceBuckets.isEmpty && s3Credentials == nil {
      errors.append(
        OptionError(
          key: "source-buckets", source: sources["source-buckets"] ?? .default,
          message: "s3:// sources need AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"))
    }
    if effectiveOriginalCacheBytes >= memoryBudget {
      errors.append(
        OptionError(
          key: "original-cache", source: sources["original-cache"] ?? .default,
          message: "must be smaller than memory-budget (\(Write.size(memoryBudget))), which counts it")
      )
    }
    if webhookURL != nil && webhookSecrets == nil {
      errors.append(
        OptionError(
          key: "webhook-secret", source: sources["webhook-secret"] ?? .default,
          message: "required with --webhook-url: deliveries are always signed"))
    }
    // A connection may not take longer than the whole download it belongs to.
    fetch.connectTimeout = min(fetch.connectTimeout, fetch.totalTimeout)
  }

  /// `--key VALUE`, `--key=VALUE`, and `--flag` for switches; `--config FILE` too.
  static func parse(arguments: [String], errors: inout [OptionError]) -> [String: String] {
    var values: [String: String] = [:]
    var index = 0
    while index < arguments.count {
      let argument = arguments[index]
      index += 1
      guard argument.hasPrefix("--") else {
        errors.append(OptionError(key: argument, source: .flag, message: "unexpected argument"))
        continue
      }
      let body = argument.dropFirst(2)
      let key = String(body.split(separator: "=", maxSplits: 1).first ?? "")
      let inline = body.contains("=") ? String(body.drop { $0 != "=" }.dropFirst()) : nil
      guard key == "config" || WorkerOption.named(key) != nil else {
        errors.append(OptionError(key: key, source: .flag, message: "unknown option --\(key)"))
        continue
      }
      if WorkerOption.named(key)?.isFlag == true {
        values[key] = inline ?? "true"
      } else if let inline {
        values[key] = inline
      } else if index < arguments.count {
        values[key] = arguments[index]
        index += 1
      } else {
        errors.append(OptionError(key: key, source: .flag, message: "--\(key) needs a value"))
      }
    }
    return values
  }

  /// The file's top-level mapping as strings; a list (allow-hosts) is joined with commas. Keys that are
  /// not options are errors: a misspelt key would otherwise be silently ignored.
  static func readYAML(_ text: String, path: String, errors: inout [OptionError]) throws -> [String: String] {
    guard let node = try Yams.compose(yaml: text) else { return [:] }  // an empty file
    guard let mapping = node.mapping else {
      errors.append(
        OptionError(key: "config", source: .file(path), message: "is not a mapping of option: value"))
      return [:]
    }
    var values: [String: String] = [:]
    for (keyNode, valueNode) in mapping {
      let key = keyNode.string ?? "\(keyNode)"
      guard WorkerOption.named(key) != nil else {
        errors.append(OptionError(key: key, source: .file(path), message: "unknown key"))
        continue
      }
      if let sequence = valueNode.sequence {
        values[key] = sequence.compactMap(\.string).joined(separator: ",")
      } else if let scalar = valueNode.scalar {
        values[key] = scalar.string
      } else {
        errors.append(OptionError(key: key, source: .file(path), message: "is not a single value or a list"))
      }
    }
    return values
  }
}
