import ArgumentParser
import Foundation
import Worker

struct ConfigCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "config", abstract: "Check the worker's configuration, or print its option table.",
    subcommands: [Check.self, Options.self])

  struct Check: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "check",
      abstract:
        "Print the effective configuration (key: value  # source), secrets masked; exit 1 on any error.",
      discussion: OptionsHelp.text)

    @Argument(
      parsing: .allUnrecognized,
      help: ArgumentHelp("--KEY VALUE options, as for `thumbd worker`", valueName: "options"))
    var options: [String] = []

    func run() async throws {
      let resolution = WorkerConfig.resolve(
        arguments: options, environment: ProcessInfo.processInfo.environment)
      let secrets = resolution.settings.secrets
      guard resolution.errors.isEmpty else {
        for error in resolution.errors { print(redacting("error: \(error)", secrets: secrets)) }
        throw ExitCode(1)
      }
      for line in resolution.report { print(redacting(line, secrets: secrets)) }
    }
  }

  struct Options: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "options", abstract: "Print the worker's options as the README's Markdown table.")

    func run() async throws {
      print(WorkerOption.markdownTable)
    }
  }
}
