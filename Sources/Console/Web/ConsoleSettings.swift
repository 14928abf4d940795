public import Storage

/// What `thumbd console` runs with (the command reads the flags and the environment).
public struct ConsoleSettings: Sendable {
  public var databaseURL: String
  public var host: String
  public var port: Int
  /// The one password; the command refuses to start without one.
  public var password: String
  /// No buttons, no forms, and every POST but login and logout refused: for a role that may only read
  /// (deploy/sql/roles.sql's thumbd_reader).
  public var readOnly: Bool
  /// Where the thumbnails are, to show them; nil: the job pages show no images.
  public var storage: StorageSettings?

  public init(
    databaseURL: String, host: String = "127.0.0.1", port: Int = 8090, password: String,
    readOnly: Bool = false, storage: StorageSettings? = nil
  ) {
    self.databaseURL = databaseURL
    self.host = host
    self.port = port
    self.password = password
    self.readOnly = readOnly
    self.storage = storage
  }
}
