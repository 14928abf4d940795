import Foundation
import Logging
import ThumbCore

/// One option of `thumbd worker`: its long name (flag `--KEY`, YAML key `KEY`), its variable, how to
/// read and validate a value, and how to print the effective one. `all` is the whole model: the
/// command line, `config check`, the YAML file and the README's table all come from it.
public struct WorkerOption: Sendable {
  public enum Kind: Sendable, Equatable {
    /// Takes a value: `--key VALUE` or `--key=VALUE`.
    case value(placeholder: String)
    /// A switch: `--key` alone means true; variables and files say 1/0, true/false, yes/no.
    case flag
  }

  public let key: String
  /// The variable that sets it: THUMBD_<KEY> unless the contract names another (DATABASE_URL).
  public let environment: String
  public let kind: Kind
  public let help: String
  /// The default as the README states it; nil: the default value itself, as `render` prints it.
  public let defaultNote: String?
  /// Printed masked by `config check`.
  public let secret: Bool
  let apply: @Sendable (String, inout WorkerConfig) throws(OptionError.Problem) -> Void
  let render: @Sendable (WorkerConfig) -> String

  init(
    _ key: String, _ kind: Kind, environment: String? = nil, secret: Bool = false,
    default note: String? = nil,
    help: String,
    apply: @escaping @Sendable (String, inout WorkerConfig) throws(OptionError.Problem) -> Void,
    render: @escaping @Sendable (WorkerConfig) -> String
  ) {
    self.key = key
    self.kind = kind
    self.environment = environment ?? "THUMBD_" + key.uppercased().replacingOccurrences(of: "-", with: "_")
    self.secret = secret
    self.defaultNote = note
    self.help = help
    self.apply = apply
    self.render = render
  }

  public var isFlag: Bool { kind == .flag }

  /// The effective value as `config check` prints it (masked when secret).
  public func display(_ settings: WorkerConfig) -> String {
    let value = render(settings)
    return secret ? DatabaseURL.masked(value) : value
  }

  public static func named(_ key: String) -> WorkerOption? { all.first { $0.key == key } }
}

/// A value that was refused, with where it came from.
public struct OptionError: Error, Sendable, Equatable, CustomStringConvertible {
  public struct Problem: Error, Sendable, Equatable {
    public var message: String
    public init(_ message: String) { self.message = message }
  }

  public var key: String
  public var source: SettingSource
  public var message: String

  public var description: String { "\(key) (\(source.label)): \(message)" }
}

/// Where an effective value came from, highest precedence first.
public enum SettingSource: Sendable, Equatable {
  case flag
  case environment(String)
  case file(String)
  case `default`

  /// `flag`, `env`, `file` or `default`, as `config check` prints them.
  public var name: String {
    switch self {
    case .flag: "flag"
    case .environment: "env"
    case .file: "file"
    case .default: "default"
    }
  }

  /// With the variable's or file's name, for error lines.
  public var label: String {
    switch self {
    case .flag: "flag"
    case .environment(let name): "env \(name)"
    case .file(let path): "file \(path)"
    case .default: "default"
    }
  }
}

// MARK: Value readers

enum Read {
  static func int(_ text: String, _ range: ClosedRange<Int>) throws(OptionError.Problem) -> Int {
    guard let value = Int(text.trimmingCharacters(in: .whitespaces)), range.contains(value) else {
      throw .init("'\(text)' is not a whole number in \(range.lowerBound)...\(range.upperBound)")
    }
    return value
  }

  static func seconds(
    _ text: String, atLeast minimum: Double, inclusive: Bool = true
  ) throws(OptionError.Problem)
    -> Double
  {
    guard let value = Double(text.trimmingCharacters(in: .whitespaces)) ?? TimeSpan.parseSeconds(text),
      inclusive ? value >= minimum : value > minimum
    else {
      throw .init("'\(text)' is not a number of seconds \(inclusive ? ">=" : ">") \(Write.number(minimum))")
    }
    return value
  }

  static func size(_ text: String, positive: Bool = true) throws(OptionError.Problem) -> Int {
    guard let bytes = ByteSize.parse(text), positive ? bytes > 0 : bytes >= 0 else {
      throw .init("'\(text)' is not a size such as 256MiB")
    }
    return bytes
  }

  /// A duration such as 7d, 12h or 30m, in seconds; 0 too.
  static func duration(_ text: String) throws(OptionError.Problem) -> Double {
    guard let seconds = TimeSpan.parseSeconds(text) else {
      throw .init("'\(text)' is not a duration such as 7d, 12h, 30m or 0")
    }
    return seconds
  }

  /// Hosts and CIDRs, comma-separated, exempt from the private-network block.
  static func allowList(_ text: String) throws(OptionError.Problem) -> AddressPolicy {
    do {
      return try AddressPolicy(allowList: text)
    } catch {
      throw .init("\(error)")
    }
  }

  static func bool(_ text: String) throws(OptionError.Problem) -> Bool {
    switch text.lowercased().trimmingCharacters(in: .whitespaces) {
    case "1", "true", "yes", "on": return true
    case "0", "false", "no", "off", "": return false
    default: throw .init("'\(text)' is not true or false")
    }
  }
}

enum Write {
  /// 268435456 -> "256MiB": a form `ByteSize.parse` reads back.
  static func size(_ bytes: Int) -> String {
    for (unit, factor) in [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)]
    where bytes >= factor && bytes % factor == 0 {
      return "\(bytes / factor)\(unit)"
    }
    return "\(bytes)"
  }

  /// 60.0 -> "60", 0.5 -> "0.5".
  static func number(_ value: Double) -> String {
    value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
  }

  static func duration(_ seconds: Double) -> String {
    for (unit, factor) in [("d", 86400.0), ("h", 3600.0), ("m", 60.0)]
    where seconds >= factor && seconds.truncatingRemainder(dividingBy: factor) == 0 {
      return "\(Int(seconds / factor))\(unit)"
    }
    return seconds == 0 ? "0" : "\(number(seconds))s"
  }
}

extension WorkerOption {
  /// `N`, `SIZE`, ...; empty for a switch.
  public var placeholder: String {
    if case .value(let placeholder) = kind { return placeholder }
    return ""
  }

  /// The default as documentation states it.
  public var defaultDescription: String {
    if let defaultNote { return defaultNote }
    let value = render(WorkerConfig())
    return value.isEmpty ? "none" : value
  }

  /// The README's option table: generated from this model, and checked against the README by a test.
  public static var markdownTable: String {
    var rows = ["| option | variable | default | what |", "|---|---|---|---|"]
    for option in all {
      let form = option.isFlag ? "`--\(option.key)`" : "`--\(option.key) \(option.placeholder)`"
      rows.append("| \(form) | `\(option.environment)` | \(option.defaultDescription) | \(option.help) |")
    }
    rows.append("| `--config FILE` | `THUMBD_CONFIG` | none | a YAML file whose keys are the options above |")
    return rows.joined(separator: "\n")
  }
}
