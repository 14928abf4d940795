/// The content identifier an iPhone gives both halves of a Live Photo. The still carries it in its
/// EXIF maker note (Apple's: `Apple iOS`, a version, a byte order mark, then a directory at offset 14
/// whose offsets count from the note's start), tag 0x11; the MOV in its metadata as
/// `com.apple.quicktime.content.identifier` (read by the video decoder).
public enum LivePhotoIdentifier {
  static let makerNoteTag = 0x927C
  static let exifDirectoryTag = 0x8769
  static let contentIdentifierTag = 0x11
  static let appleSignature = Array("Apple iOS\0".utf8)

  /// The identifier in a JPEG's or HEIF's EXIF, when it has Apple's maker note with one.
  public static func ofStill(_ bytes: [UInt8], format: ImageFormat) -> String? {
    switch format {
    case .jpeg:
      var found: String?
      bytes.withUnsafeBytes { data in
        ExifReader.jpegTIFF(data) { tiff in
          found = inTIFF(tiff)
          return found == nil
        }
      }
      return found
    case .heif:
      // HEIF's Exif item: a 4-byte offset to the TIFF header, then the block.
      guard let meta = HEIFMeta(bytes),
        let id = meta.types.sorted(by: { $0.key < $1.key }).first(where: { $0.value == "Exif" })?.key,
        let data = meta.data(id), data.count > 4
      else { return nil }
      let skip = 4 + (Int(data[0]) << 24 | Int(data[1]) << 16 | Int(data[2]) << 8 | Int(data[3]))
      guard skip < data.count else { return nil }
      return data.withUnsafeBytes { inTIFF(UnsafeRawBufferPointer(rebasing: $0[skip...])) }
    default:
      return nil
    }
  }

  /// The identifier in a TIFF structure's Exif directory's Apple maker note.
  static func inTIFF(_ tiff: UnsafeRawBufferPointer) -> String? {
    guard let view = TIFFView(tiff: tiff), let first = view.firstDirectory,
      let pointer = view.entry(exifDirectoryTag, inDirectoryAt: first),
      let exif = view.u32(pointer.valueField),
      let makerNote = view.entry(makerNoteTag, inDirectoryAt: exif), let note = view.bytes(of: makerNote),
      note.count >= 16, note.prefix(appleSignature.count).elementsEqual(appleSignature),
      let order = TIFFView.order(note[12], note[13])
    else { return nil }
    let apple = TIFFView(note, littleEndian: order)
    guard let entry = apple.entry(contentIdentifierTag, inDirectoryAt: 14), entry.type == 2,
      let text = apple.bytes(of: entry)
    else { return nil }
    return identifier(text)
  }

  /// An identifier as thumbd keeps it: printable ASCII without spaces, at most 64 characters, the
  /// terminating NUL dropped; nil for anything else (it is a stranger's text, stored and compared).
  public static func identifier<Bytes: Collection<UInt8>>(_ raw: Bytes) -> String? {
    let text = raw.prefix { $0 != 0 }
    guard !text.isEmpty, text.count <= 64, text.allSatisfy({ (0x21...0x7E).contains($0) }) else { return nil }
    return String(decoding: text, as: UTF8.self)
  }
}
