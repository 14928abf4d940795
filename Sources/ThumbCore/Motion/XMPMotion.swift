import Foundation

/// What a still's XMP says of its motion (Google's Motion Photo formats): the items appended to the
/// still (`Container:Directory`), the older `GCamera:MicroVideoOffset`, and the still's moment in the
/// clip. Read from the packet's text by property name, in attribute form (`Item:Length="…"`, as cameras
/// write it) or element form (`<Item:Length>…</Item:Length>`); numbers are digits only, so a sign, a
/// fraction or an overflow is no number.
struct XMPMotion {
  let text: String

  init(_ text: String) { self.text = text }

  /// The still's moment: `MotionPhotoPresentationTimestampUs`, else the older
  /// `MicroVideoPresentationTimestampUs`; -1 (and anything negative) means "not said".
  var stillMicroseconds: Int? {
    for name in ["GCamera:MotionPhotoPresentationTimestampUs", "GCamera:MicroVideoPresentationTimestampUs"] {
      if let value = Self.value(name, in: Substring(text)), let number = Self.number(value) { return number }
    }
    return nil
  }

  /// The `MotionPhoto` item of the directory: the items after the primary lie end to end at the end of
  /// the file, each followed by its padding, so an item begins where the lengths of it and of the items
  /// after it, counted back from the end, say.
  func container(fileSize: Int) -> EmbeddedClip.Claim {
    guard let directory = text.range(of: "Container:Directory") else { return .none }
    // Each item's text runs from its start tag to the next one (or the directory's end): its attributes
    // or its child elements, whichever form it is written in.
    let items = text[directory.upperBound...].components(separatedBy: "<Container:Item").dropFirst()
      .map { Substring($0.components(separatedBy: "Container:Directory>")[0]) }
    guard let motion = items.firstIndex(where: { Self.value("Item:Semantic", in: $0) == "MotionPhoto" })
    else {
      return .none
    }
    var fromEnd = 0
    for item in items[motion...] {
      let length = Self.value("Item:Length", in: item).flatMap(Self.number)
      let padding = Self.value("Item:Padding", in: item).map { Self.number($0) ?? -1 } ?? 0
      guard let length, padding >= 0, length <= fileSize, padding <= fileSize, fromEnd <= fileSize else {
        return .refused("XMP gives the motion item an unreadable length")
      }
      fromEnd += length + padding
    }
    guard fromEnd <= fileSize, let length = Self.value("Item:Length", in: items[motion]).flatMap(Self.number)
    else { return .refused("XMP's items are longer (\(fromEnd) bytes) than the file (\(fileSize))") }
    return .at(offset: fileSize - fromEnd, length: length, layout: .googleContainer)
  }

  /// The older layout: `GCamera:MicroVideo="1"` and the clip's distance from the end of the file.
  func microVideo(fileSize: Int) -> EmbeddedClip.Claim {
    guard let flag = Self.value("GCamera:MicroVideo", in: Substring(text)), flag == "1" else { return .none }
    guard let value = Self.value("GCamera:MicroVideoOffset", in: Substring(text)),
      let back = Self.number(value),
      back > 0, back < fileSize
    else { return .refused("XMP gives an unreadable MicroVideoOffset") }
    return .at(offset: fileSize - back, length: back, layout: .googleMicroVideo)
  }

  /// A property's value in `text`: `name="value"` (or single quotes), else `<name>value</name>`.
  static func value(_ name: String, in text: Substring) -> String? {
    for quote in ["\"", "'"] {
      if let start = text.range(of: name + "=" + quote) {
        let rest = text[start.upperBound...]
        guard let end = rest.firstIndex(of: Character(quote)) else { return nil }
        return String(rest[..<end]).trimmingSpaces
      }
    }
    if let start = text.range(of: "<" + name + ">"),
      let end = text[start.upperBound...].range(of: "</" + name + ">")
    {
      return String(text[start.upperBound..<end.lowerBound]).trimmingSpaces
    }
    return nil
  }

  /// A count of bytes or microseconds: 1 to 18 digits, nothing else.
  static func number(_ text: String) -> Int? {
    guard !text.isEmpty, text.count <= 18, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
      return nil
    }
    return Int(text)
  }
}

extension String {
  fileprivate var trimmingSpaces: String {
    let bytes = utf8.drop { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
    let trimmed = bytes.reversed().drop { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
    return String(decoding: trimmed.reversed(), as: UTF8.self)
  }
}

/// Where a still's XMP packet is: a JPEG's APP1 segment named `http://ns.adobe.com/xap/1.0/`, a HEIF's
/// `mime` item that holds one.
enum MotionXMP {
  static let jpegName = Array("http://ns.adobe.com/xap/1.0/\0".utf8)

  static func packet(in bytes: [UInt8], format: ImageFormat) -> String? {
    switch format {
    case .jpeg:
      var found: String?
      bytes.withUnsafeBytes { data in
        JPEGSegments.forEach(data) { marker, payload in
          if marker == 0xE1, payload.count > jpegName.count,
            payload.prefix(jpegName.count).elementsEqual(jpegName)
          {
            found = String(decoding: payload.dropFirst(jpegName.count), as: UTF8.self)
          }
          return found == nil
        }
      }
      return found
    case .heif:
      guard let meta = HEIFMeta(bytes) else { return nil }
      for (id, type) in meta.types.sorted(by: { $0.key < $1.key }) where type == "mime" {
        guard let data = meta.data(id) else { continue }
        let text = String(decoding: data, as: UTF8.self)
        if text.contains("xmpmeta") { return text }
      }
      return nil
    default:
      return nil
    }
  }
}
