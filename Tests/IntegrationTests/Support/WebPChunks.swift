/// The RIFF chunks of a WebP file, by their four-character tags, in order: an animation has `ANIM` and
/// an `ANMF` for each frame it keeps.
func webPChunks(_ bytes: [UInt8]) -> [String] {
  var tags: [String] = []
  var at = 12
  while at + 8 <= bytes.count {
    tags.append(String(decoding: bytes[at..<(at + 4)], as: UTF8.self))
    let size =
      Int(bytes[at + 4]) | Int(bytes[at + 5]) << 8 | Int(bytes[at + 6]) << 16 | Int(bytes[at + 7]) << 24
    at += 8 + size + size % 2
  }
  return tags
}
