import Foundation

/// Polls `condition` every 50 ms until it holds or `timeout` seconds pass; returns whether it held.
public func eventually(timeout: Double, _ condition: () throws -> Bool) async rethrows -> Bool {
  let deadline = Date().addingTimeInterval(timeout)
  while Date() < deadline {
    if try condition() { return true }
    try? await Task.sleep(for: .milliseconds(50))
  }
  return try condition()
}
