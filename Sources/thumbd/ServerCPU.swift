import ArgumentParser
import Foundation

/// The CPU time a local PostgreSQL server has used: its postmaster's, its live processes' and the ones
/// that ended (the postmaster reaps its backends, so theirs is in its children's times). For `thumbd
/// bench queue --server-pid`, which reports the database's CPU per job at a fleet's shape: that, not the
/// workers', decides how large a fleet one database serves.
struct ServerCPU {
  let postmaster: Int32

  /// Seconds of CPU (user and system) used so far by the server's processes, live and ended.
  func seconds() throws -> Double {
    guard let own = Self.stat(postmaster) else {
      throw ValidationError("no process \(postmaster) (--server-pid names the server's postmaster)")
    }
    var ticks = own.used + own.reaped
    for pid in Self.processes() where pid != postmaster {
      if let child = Self.stat(pid), child.parent == postmaster { ticks += child.used }
    }
    return Double(ticks) / Double(sysconf(Int32(_SC_CLK_TCK)))
  }

  private struct Stat {
    var parent: Int32
    /// utime + stime
    var used: Int
    /// cutime + cstime: children waited for
    var reaped: Int
  }

  /// /proc/PID/stat: the fields after the command's closing parenthesis (the command may hold spaces).
  private static func stat(_ pid: Int32) -> Stat? {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
      let close = text.lastIndex(of: ")")
    else { return nil }
    let fields = text[text.index(after: close)...].split(separator: " ")
    // fields[0] is the state (field 3); ppid is field 4, utime..cstime are fields 14-17.
    guard fields.count > 14, let parent = Int32(fields[1]), let utime = Int(fields[11]),
      let stime = Int(fields[12]), let cutime = Int(fields[13]), let cstime = Int(fields[14])
    else { return nil }
    return Stat(parent: parent, used: utime + stime, reaped: cutime + cstime)
  }

  private static func processes() -> [Int32] {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return names.compactMap { Int32($0) }
  }
}
