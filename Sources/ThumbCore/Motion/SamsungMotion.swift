/// Where Samsung's cameras put a Motion Photo's clip: in One UI 6 HEICs a top-level `mpvd` box, in JPEGs
/// (and older HEICs) a block of the SEF trailer named `MotionPhoto_Data`.
///
/// The trailer ends the file: blocks of data, then a directory (`SEFH`, a version, a count, and per
/// block 12 bytes: two zeros, its type, its distance back from the directory, its size), then the
/// directory's length and `SEFT`, all little-endian. Each block begins with two zeros, its type, the
/// length of its name and the name; its data follows.
enum SamsungMotion {
  /// The type of the block that holds the clip.
  static let motionBlockType = 0x0A30

  /// The `mpvd` box among the file's top-level boxes.
  static func box(in bytes: [UInt8]) -> EmbeddedClip.Claim {
    var at = 0
    while at + 8 <= bytes.count {
      var size = Int(ImageProbe.be32(bytes, at))
      let type = bytes[(at + 4)..<(at + 8)]
      var header = 8
      if size == 1 {
        guard at + 16 <= bytes.count, ImageProbe.be32(bytes, at + 8) == 0 else { return .none }
        size = Int(ImageProbe.be32(bytes, at + 12))
        header = 16
      } else if size == 0 {
        size = bytes.count - at
      }
      let fits = size >= header && size <= bytes.count - at
      if type.elementsEqual("mpvd".utf8) {
        guard fits, size > header else {
          return .refused("the mpvd box of \(size) bytes at \(at) does not fit the file of \(bytes.count)")
        }
        return .at(offset: at + header, length: size - header, layout: .samsungBox)
      }
      guard fits else { return .none }
      at += size
    }
    return .none
  }

  /// The `MotionPhoto_Data` block of the trailer.
  static func trailer(in bytes: [UInt8]) -> EmbeddedClip.Claim {
    let n = bytes.count
    guard n >= 20, bytes[(n - 4)..<n].elementsEqual("SEFT".utf8) else { return .none }
    let directoryLength = le32(bytes, n - 8)
    guard directoryLength >= 12, directoryLength <= n - 8 else {
      return .refused("Samsung's trailer gives a directory of \(directoryLength) bytes")
    }
    let directory = n - 8 - directoryLength
    guard bytes[directory..<(directory + 4)].elementsEqual("SEFH".utf8) else {
      return .refused("Samsung's trailer has no directory where it says")
    }
    let count = le32(bytes, directory + 8)
    guard count <= (directoryLength - 12) / 12 else {
      return .refused("Samsung's trailer lists \(count) blocks in \(directoryLength) bytes")
    }
    for index in 0..<count {
      let entry = directory + 12 + 12 * index
      let type = Int(bytes[entry + 2]) | Int(bytes[entry + 3]) << 8
      let back = le32(bytes, entry + 4)
      let size = le32(bytes, entry + 8)
      guard type == motionBlockType else { continue }
      guard back <= directory, size >= 8, size <= back else {
        return .refused("Samsung's trailer puts its clip block \(back) bytes back, \(size) long")
      }
      let block = directory - back
      let nameLength = le32(bytes, block + 4)
      guard nameLength <= size - 8 else {
        return .refused("Samsung's clip block names itself in \(nameLength) bytes of \(size)")
      }
      return .at(offset: block + 8 + nameLength, length: size - 8 - nameLength, layout: .samsungTrailer)
    }
    return .none
  }

  static func le32(_ b: [UInt8], _ i: Int) -> Int {
    Int(b[i]) | Int(b[i + 1]) << 8 | Int(b[i + 2]) << 16 | Int(b[i + 3]) << 24
  }
}
