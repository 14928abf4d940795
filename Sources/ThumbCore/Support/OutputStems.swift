/// The names `thumbd thumbnail` writes each input's variants under (`<stem>_<variant>.<ext>`), chosen so
/// that no input's files overwrite another's.
///
/// Each input's stem is its file name without the extension; an input whose stem an earlier input
/// already took keeps its whole file name instead (`a.heic` after `a.jpg` writes `a.heic_small.jpg`), and
/// one whose whole name is taken too (the same name in two folders) gains `-2`, `-3`, ... after it.
public enum OutputStems {
  /// One stem per path, in the order given.
  public static func assign(_ paths: [String]) -> [String] {
    var taken = Set<String>()
    return paths.map { path in
      let name = String(path.split(separator: "/", omittingEmptySubsequences: true).last ?? Substring(path))
      let dot = name.lastIndex(of: ".").flatMap { $0 == name.startIndex ? nil : $0 }
      let stem = dot.map { String(name[..<$0]) } ?? name
      var chosen = taken.contains(stem) ? name : stem
      var suffix = 2
      while taken.contains(chosen) {
        chosen = "\(name)-\(suffix)"
        suffix += 1
      }
      taken.insert(chosen)
      return chosen
    }
  }
}
