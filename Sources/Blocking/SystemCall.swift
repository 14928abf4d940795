#if canImport(Glibc)
  import Glibc
#endif

/// One way to make a system call: retried while a signal interrupts it (EINTR), its errno read at once,
/// before anything else can overwrite it (after swift-nio's system-call wrapper).
public enum SystemCall {
  /// A failed call's errno.
  public struct Failure: Error, Equatable, CustomStringConvertible {
    public var code: Int32

    public init(_ code: Int32) { self.code = code }

    public var description: String { String(cString: strerror(code)) }
  }

  /// Calls `body`, again while it fails with EINTR: its result (non-negative), or its errno.
  public static func run<T: SignedInteger>(_ body: () -> T) -> Result<T, Failure> {
    while true {
      let result = body()
      if result >= 0 { return .success(result) }
      let code = errno
      if code != EINTR { return .failure(Failure(code)) }
    }
  }
}
