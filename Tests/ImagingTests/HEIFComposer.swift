@testable import ThumbCore

/// HEIF files laid out as phones write HDR photos, from single-image HEICs libheif made here: a primary
/// image, an auxiliary image (`auxl` to the primary, `auxC` naming its kind: Apple's HDR gain map, a
/// depth map), and XMP as a `mime` item (`cdsc` to the primary). No corpus file has a gain map.
enum HEIFComposer {
  /// One coded picture taken out of a HEIC: its hvcC and ispe property boxes, whole, and its data.
  struct Coded {
    var hvcC: [UInt8]
    var ispe: [UInt8]
    var data: [UInt8]

    init?(_ heic: [UInt8]) {
      guard let meta = HEIFMeta(heic), let id = meta.primary, let location = meta.locations[id],
        location.method == 0, let associated = meta.associations[id]
      else { return nil }
      let boxes = associated.map { meta.properties[$0.index - 1] }
      guard let hvcC = boxes.first(where: { $0.type == "hvcC" }),
        let ispe = boxes.first(where: { $0.type == "ispe" })
      else { return nil }
      self.hvcC = Array(heic[(hvcC.body - 8)..<hvcC.end])
      self.ispe = Array(heic[(ispe.body - 8)..<ispe.end])
      data = location.extents.flatMap { heic[$0] }
    }
  }

  static let appleGainMap = "urn:com:apple:photo:2020:aux:hdrgainmap"
  static let depthMap = "urn:mpeg:hevc:2015:auxid:2"

  /// The file: item 1 the primary, then the auxiliary image if any, then the XMP if any.
  static func compose(primary: Coded, auxiliary: (Coded, urn: String)? = nil, xmp: String? = nil) -> [UInt8] {
    let ftyp = box("ftyp", Array("heic".utf8) + u32(0) + Array("mif1heic".utf8))
    var payloads: [[UInt8]] = [primary.data]
    var infe: [[UInt8]] = [fullBox("infe", 2, u16(1) + u16(0) + Array("hvc1".utf8) + [0])]
    var references: [UInt8] = []
    var properties: [[UInt8]] = [primary.hvcC, primary.ispe]
    var associations: [[UInt8]] = [u16(1) + [2, 0x81, 0x02]]
    var next: UInt16 = 2
    if let (coded, urn) = auxiliary {
      payloads.append(coded.data)
      infe.append(fullBox("infe", 2, u16(next) + u16(0) + Array("hvc1".utf8) + [0]))
      references += box("auxl", u16(next) + u16(1) + u16(1))
      properties += [coded.hvcC, coded.ispe, fullBox("auxC", 0, Array(urn.utf8) + [0])]
      let base = UInt8(properties.count - 2)
      associations.append(u16(next) + [3, 0x80 | base, base + 1, 0x80 | (base + 2)])
      next += 1
    }
    if let xmp {
      payloads.append(Array(xmp.utf8))
      infe.append(
        fullBox(
          "infe", 2, u16(next) + u16(0) + Array("mime".utf8) + [0] + Array("application/rdf+xml".utf8) + [0]))
      references += box("cdsc", u16(next) + u16(1) + u16(1))
    }
    func meta(dataStart: Int) -> [UInt8] {
      var offset = dataStart
      var locations = [UInt8]()
      for (index, payload) in payloads.enumerated() {
        locations +=
          u16(UInt16(index + 1)) + u16(0) + u16(1) + u32(UInt32(offset)) + u32(UInt32(payload.count))
        offset += payload.count
      }
      let hdlr = fullBox("hdlr", 0, u32(0) + Array("pict".utf8) + u32(0) + u32(0) + u32(0) + [0])
      let pitm = fullBox("pitm", 0, u16(1))
      let iinf = fullBox("iinf", 0, u16(UInt16(infe.count)) + infe.flatMap { $0 })
      let iref = references.isEmpty ? [] : fullBox("iref", 0, references)
      let ipco = box("ipco", properties.flatMap { $0 })
      let ipma = fullBox("ipma", 0, u32(UInt32(associations.count)) + associations.flatMap { $0 })
      let iloc = fullBox("iloc", 0, [0x44, 0x00] + u16(UInt16(payloads.count)) + locations)
      return fullBox("meta", 0, hdlr + pitm + iinf + iref + box("iprp", ipco + ipma) + iloc)
    }
    let sized = meta(dataStart: 0)
    let start = ftyp.count + sized.count + 8
    return ftyp + meta(dataStart: start) + box("mdat", payloads.flatMap { $0 })
  }

  static func u16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }
  static func u32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(value >> (24 - 8 * $0) & 0xFF) } }

  static func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
    u32(UInt32(payload.count + 8)) + Array(type.utf8) + payload
  }

  static func fullBox(_ type: String, _ version: UInt8, _ payload: [UInt8]) -> [UInt8] {
    box(type, [version, 0, 0, 0] + payload)
  }
}
