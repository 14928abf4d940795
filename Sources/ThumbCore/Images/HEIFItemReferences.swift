/// Reads the item references (`meta`/`iref`) of a HEIF or AVIF file, so that a derivation loop is
/// refused before libheif sees the file. A derived image (a grid, an overlay, an identity transform)
/// names the items it is made of with `dimg` references; an item that is, through them, made of itself
/// sends libheif 1.15 (Debian 12's) into endless recursion and the worker dies of a stack overflow.
/// libheif checks this itself from 1.16 on; this check keeps thumbd safe with the older library.
///
/// Only a well-formed box tree is judged: anything this reader does not understand is left to
/// libheif, which refuses it with its own error.
public enum HEIFItemReferences {
  /// The item whose `dimg` references lead back to it, or nil when there is no such loop (or no
  /// readable `iref`).
  public static func derivationLoop(in bytes: [UInt8]) -> UInt32? {
    guard let references = references(of: "dimg", in: bytes) else { return nil }
    return firstLoop(references)
  }

  /// from item → to items, for the references of one type; nil when the file has no readable `iref`.
  static func references(of type: String, in bytes: [UInt8]) -> [UInt32: [UInt32]]? {
    guard let meta = boxes(in: bytes, from: 0, to: bytes.count).first(where: { $0.type == "meta" }),
      meta.body + 4 <= meta.end,  // meta and iref are full boxes: version and flags come first
      let iref = boxes(in: bytes, from: meta.body + 4, to: meta.end).first(where: { $0.type == "iref" }),
      iref.body + 4 <= iref.end
    else { return nil }
    let idBytes = bytes[iref.body] == 0 ? 2 : 4  // the iref's version: 0 for 16-bit item IDs, 1 for 32-bit
    var references: [UInt32: [UInt32]] = [:]
    for reference in boxes(in: bytes, from: iref.body + 4, to: iref.end) where reference.type == type {
      var at = reference.body
      func read(_ count: Int) -> UInt32? {
        guard at + count <= reference.end else { return nil }
        defer { at += count }
        return bytes[at..<(at + count)].reduce(0) { $0 << 8 | UInt32($1) }
      }
      guard let from = read(idBytes), let count = read(2) else { return nil }
      for _ in 0..<count {
        guard let to = read(idBytes) else { return nil }
        references[from, default: []].append(to)
      }
    }
    return references
  }

  /// The first item (in ascending order) that lies on a loop of `references`. Iterative, so a long chain
  /// in a hostile file cannot exhaust this stack either.
  static func firstLoop(_ references: [UInt32: [UInt32]]) -> UInt32? {
    enum Mark { case onPath, done }
    var marks: [UInt32: Mark] = [:]
    for start in references.keys.sorted() where marks[start] == nil {
      // Each frame: an item and the index of the next reference of it to follow.
      var path: [(item: UInt32, next: Int)] = [(start, 0)]
      marks[start] = .onPath
      while let top = path.last {
        let targets = references[top.item] ?? []
        guard top.next < targets.count else {
          marks[top.item] = .done
          path.removeLast()
          continue
        }
        path[path.count - 1].next += 1
        let target = targets[top.next]
        switch marks[target] {
        case .onPath: return target
        case .done: continue
        case nil:
          marks[target] = .onPath
          path.append((target, 0))
        }
      }
    }
    return nil
  }

  struct Box {
    var type: String
    /// Where the box's contents start and where the box ends.
    var body: Int
    var end: Int
  }

  /// The boxes laid end to end in bytes[from..<to]; stops at the first one that does not fit.
  static func boxes(in bytes: [UInt8], from: Int, to: Int) -> [Box] {
    var found: [Box] = []
    var at = from
    while at + 8 <= to {
      let size32 = Int(ImageProbe.be32(bytes, at))
      var header = 8
      var size = size32
      if size32 == 1 {  // a 64-bit size follows the type
        guard at + 16 <= to else { break }
        let high = Int(ImageProbe.be32(bytes, at + 8))
        guard high == 0 else { break }  // over 4 GiB: not a file thumbd accepts
        size = Int(ImageProbe.be32(bytes, at + 12))
        header = 16
      } else if size32 == 0 {  // the box runs to the end of its parent
        size = to - at
      }
      guard size >= header, at + size <= to else { break }
      found.append(
        Box(
          type: String(decoding: bytes[(at + 4)..<(at + 8)], as: UTF8.self), body: at + header, end: at + size
        ))
      at += size
    }
    return found
  }
}
