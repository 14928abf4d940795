/// An HEVC-coded picture of a HEIF file (a `hvc1` item, or a `grid` of them) as its container
/// describes it: where the coded bytes are, the decoder set-up (`hvcC`), the layout of the tiles and the
/// transforms to apply. Read by thumbd's own HEVC route (HEIFSource), which decodes the tiles straight
/// into YCbCr planes; libheif 1.15 assembles a grid in RGB, converting every tile first, which costs
/// about as much as decoding them.
///
/// Only what that route handles is described; anything else (an unknown essential property, mixed
/// tiles, a derivation other than a grid of coded tiles, construction from other items) gives nil and
/// the file goes through libheif as before. The reader never trusts a size or offset it has not checked
/// against the bytes.
public struct HEVCItem: Sendable {
  /// The coded bytes of one tile (or of the whole picture): extents within the file.
  public var tiles: [[Range<Int>]]
  /// The tiles' parameter sets (VPS, SPS, PPS...) from `hvcC`, each behind a four-byte length.
  public var parameterSets: [UInt8]
  /// The size in bytes of the length before each NAL unit of the coded data (1, 2 or 4).
  public var lengthSize: Int
  /// 0 monochrome, 1 4:2:0, 2 4:2:2, 3 4:4:4, as `hvcC` says.
  public var chromaFormat: Int
  public var lumaBits: Int
  public var chromaBits: Int
  public var columns: Int
  public var rows: Int
  /// One tile's size (`ispe` of the tiles; the picture's own for a single image).
  public var tileSize: PixelSize
  /// The picture before `clap` and the turns: a grid's output size, or the coded picture's.
  public var size: PixelSize
  /// The clean aperture (`clap`) as libheif rounds it, in `size`'s coordinates; nil for none.
  public var crop: (x: Int, y: Int, width: Int, height: Int)?
  /// The turns after the crop, in the order the file lists them.
  public var transforms: [Transform]
  /// The item's `nclx` colour box, when it has one.
  public var nclx: VideoSignal?
  /// The tiles' sequence parameter set (every tile shares one `hvcC`).
  public var sequence: HEVCSequenceParameters

  /// Range, matrix, primaries and transfer as HEIF orders them: the `nclx` box, else the stream's VUI,
  /// else H.265's inferences (HEVCSequenceParameters gives those when its VUI is silent).
  public var signal: VideoSignal { nclx ?? sequence.signal }

  public enum Transform: Sendable, Equatable {
    /// `irot`: quarter turns anticlockwise.
    case rotation(Int)
    /// `imir`: 0 mirrors about a vertical axis (left and right swap), 1 about a horizontal one.
    case mirror(Int)
  }

  /// The displayed size: after the crop and the turns.
  public var displayedSize: PixelSize {
    let cropped = crop.map { PixelSize(width: $0.width, height: $0.height) } ?? size
    let quarterTurns = transforms.reduce(0) { n, t in
      if case .rotation(let r) = t { return n + r } else { return n }
    }
    return quarterTurns % 2 == 1 ? PixelSize(width: cropped.height, height: cropped.width) : cropped
  }

  /// The item `id` of the file, when it is an HEVC picture this reader describes.
  public static func read(_ bytes: [UInt8], item id: UInt32) -> HEVCItem? {
    guard let meta = HEIFMeta(bytes) else { return nil }
    return meta.hevcItem(id)
  }

  /// The file's primary item (`pitm`), when it is an HEVC picture this reader describes.
  public static func readPrimary(_ bytes: [UInt8]) -> HEVCItem? {
    guard let meta = HEIFMeta(bytes), let primary = meta.primary else { return nil }
    return meta.hevcItem(primary)
  }
}

/// The parts of a HEIF `meta` box the HEVC route reads.
struct HEIFMeta {
  let bytes: [UInt8]
  /// Item → type (`hvc1`, `grid`, `Exif`...).
  var types: [UInt32: String] = [:]
  /// Item → construction method (0 file offsets, 1 `idat`) and extents (absolute file ranges).
  var locations: [UInt32: (method: Int, extents: [Range<Int>])] = [:]
  var dimg: [UInt32: [UInt32]] = [:]
  /// ipco's properties in order (1-based in ipma), as box ranges.
  var properties: [HEIFItemReferences.Box] = []
  /// Item → (property index, essential) in ipma order.
  var associations: [UInt32: [(index: Int, essential: Bool)]] = [:]
  var idat: Range<Int>?
  var primary: UInt32?

  init?(_ bytes: [UInt8]) {
    self.bytes = bytes
    typealias Boxes = HEIFItemReferences
    guard let meta = Boxes.boxes(in: bytes, from: 0, to: bytes.count).first(where: { $0.type == "meta" }),
      meta.body + 4 <= meta.end
    else { return nil }
    for box in Boxes.boxes(in: bytes, from: meta.body + 4, to: meta.end) {
      var reader = Reader(bytes: bytes, at: box.body, end: box.end)
      switch box.type {
      case "iinf": guard readItemInfo(&reader) else { return nil }
      case "iloc": guard readLocations(&reader) else { return nil }
      case "iref":
        // The same references the derivation-loop check reads; a broken iref declines the file.
        guard let references = HEIFItemReferences.references(of: "dimg", in: bytes) else { return nil }
        dimg = references
      case "iprp":
        for part in Boxes.boxes(in: bytes, from: box.body, to: box.end) {
          if part.type == "ipco" {
            properties = Boxes.boxes(in: bytes, from: part.body, to: part.end)
          } else if part.type == "ipma" {
            var r = Reader(bytes: bytes, at: part.body, end: part.end)
            guard readAssociations(&r) else { return nil }
          }
        }
      case "idat": idat = box.body..<box.end
      case "pitm":
        guard let version = reader.u8(), reader.skip(3) else { return nil }
        primary = reader.id(version)
      default: continue
      }
    }
  }

  private mutating func readItemInfo(_ r: inout Reader) -> Bool {
    guard let version = r.u8(), r.skip(3), let count = version == 0 ? r.u16().map(UInt32.init) : r.u32()
    else { return false }
    var entries = HEIFItemReferences.boxes(in: bytes, from: r.at, to: r.end)
    guard entries.count >= count else { return false }
    entries = Array(entries.prefix(Int(count)))
    for entry in entries where entry.type == "infe" {
      var e = Reader(bytes: bytes, at: entry.body, end: entry.end)
      guard let v = e.u8(), e.skip(3), v >= 2, let id = v == 2 ? e.u16().map(UInt32.init) : e.u32(),
        e.skip(2), let type = e.fourCC()
      else { continue }
      types[id] = type
    }
    return true
  }

  private mutating func readLocations(_ r: inout Reader) -> Bool {
    guard let version = r.u8(), r.skip(3), let sizes = r.u8(), let sizes2 = r.u8() else { return false }
    let offsetSize = Int(sizes >> 4)
    let lengthSize = Int(sizes & 15)
    let baseOffsetSize = Int(sizes2 >> 4)
    let indexSize = version >= 1 ? Int(sizes2 & 15) : 0
    guard let count = version < 2 ? r.u16().map(UInt32.init) : r.u32() else { return false }
    for _ in 0..<count {
      guard let id = version < 2 ? r.u16().map(UInt32.init) : r.u32() else { return false }
      var method = 0
      if version >= 1 {
        guard let m = r.u16() else { return false }
        method = Int(m & 15)
      }
      guard let reference = r.u16(), let base = r.uint(baseOffsetSize), let extents = r.u16() else {
        return false
      }
      var ranges: [Range<Int>] = []
      for _ in 0..<extents {
        guard r.skip(indexSize), let offset = r.uint(offsetSize), let length = r.uint(lengthSize) else {
          return false
        }
        // A length of 0 means "to the end of the file"; only plain extents are read here.
        guard reference == 0, length > 0, base <= Int.max / 2, offset <= Int.max / 2 else {
          ranges = []
          method = -1
          break
        }
        ranges.append((base + offset)..<(base + offset + length))
      }
      locations[id] = (method, ranges)
    }
    return true
  }

  private mutating func readAssociations(_ r: inout Reader) -> Bool {
    // Flag bit 0 (in the last of the three flag bytes): property indexes are 15 bits, not 7.
    guard let version = r.u8(), r.skip(2), let flags = r.u8(), let count = r.u32() else { return false }
    for _ in 0..<count {
      guard let id = version < 1 ? r.u16().map(UInt32.init) : r.u32(), let n = r.u8() else { return false }
      var list: [(Int, Bool)] = []
      for _ in 0..<n {
        if flags & 1 != 0 {
          guard let v = r.u16() else { return false }
          list.append((Int(v & 0x7FFF), v & 0x8000 != 0))
        } else {
          guard let v = r.u8() else { return false }
          list.append((Int(v & 0x7F), v & 0x80 != 0))
        }
      }
      associations[id] = list
    }
    return true
  }

  /// The bytes of an item's data (its extents joined), for the small ones (a grid's descriptor).
  func data(_ id: UInt32) -> [UInt8]? {
    guard let location = locations[id] else { return nil }
    var out: [UInt8] = []
    for extent in location.extents {
      let range: Range<Int>
      switch location.method {
      case 0: range = extent
      case 1:
        guard let idat, extent.upperBound <= idat.count else { return nil }
        range = (idat.lowerBound + extent.lowerBound)..<(idat.lowerBound + extent.upperBound)
      default: return nil
      }
      guard range.upperBound <= bytes.count, range.count <= 1 << 16 else { return nil }
      out += bytes[range]
    }
    return out
  }

  struct Properties {
    var hvcC: HEIFItemReferences.Box?
    var size: PixelSize?
    var clap: [Int64]?
    var transforms: [HEVCItem.Transform] = []
    var clapAfterTransform = false
    var nclx: VideoSignal?
  }

  /// The properties of an item that the HEVC route knows, or nil when an essential one is unknown.
  func properties(of id: UInt32) -> Properties? {
    var found = Properties()
    for (index, essential) in associations[id] ?? [] {
      guard index > 0 else { continue }
      guard index <= properties.count else { return nil }
      let box = properties[index - 1]
      var r = Reader(bytes: bytes, at: box.body, end: box.end)
      switch box.type {
      case "hvcC": found.hvcC = box
      case "ispe":
        guard r.skip(4), let w = r.u32(), let h = r.u32(), w > 0, h > 0, w <= 1 << 16, h <= 1 << 16 else {
          return nil
        }
        found.size = PixelSize(width: Int(w), height: Int(h))
      case "irot":
        guard let a = r.u8() else { return nil }
        found.transforms.append(.rotation(Int(a & 3)))
      case "imir":
        guard let a = r.u8() else { return nil }
        found.transforms.append(.mirror(Int(a & 1)))
      case "clap":
        var values: [Int64] = []
        for k in 0..<8 {
          guard let v = r.u32() else { return nil }
          // Offsets (the 5th and 7th) are signed.
          values.append(k == 4 || k == 6 ? Int64(Int32(bitPattern: v)) : Int64(v))
        }
        if !found.transforms.isEmpty { found.clapAfterTransform = true }
        found.clap = values
      case "colr":
        guard let type = r.fourCC() else { return nil }
        if type == "nclx" {
          guard let p = r.u16(), let t = r.u16(), let m = r.u16(), let full = r.u8() else { return nil }
          found.nclx = VideoSignal(
            fullRange: full & 0x80 != 0, primaries: Int(p), transfer: Int(t), matrix: Int(m))
        }
      case "pixi", "auxC", "rloc", "lsel": continue
      default:
        if essential { return nil }
      }
    }
    return found
  }

  func hevcItem(_ id: UInt32) -> HEVCItem? {
    guard let type = types[id], let own = properties(of: id) else { return nil }
    var tileIDs: [UInt32]
    var columns = 1
    var rows = 1
    var size: PixelSize
    if type == "hvc1" {
      tileIDs = [id]
      guard let s = own.size else { return nil }
      size = s
    } else if type == "grid" {
      guard let descriptor = data(id), descriptor.count >= 8, descriptor[0] == 0 else { return nil }
      rows = Int(descriptor[2]) + 1
      columns = Int(descriptor[3]) + 1
      var r = Reader(bytes: descriptor, at: 4, end: descriptor.count)
      let wide = descriptor[1] & 1 != 0
      guard let w = wide ? r.u32() : r.u16().map(UInt32.init),
        let h = wide ? r.u32() : r.u16().map(UInt32.init),
        w > 0, h > 0, w <= 1 << 16, h <= 1 << 16
      else { return nil }
      size = PixelSize(width: Int(w), height: Int(h))
      guard let tiles = dimg[id], tiles.count == rows * columns else { return nil }
      tileIDs = tiles
    } else {
      return nil
    }
    // Every tile: a coded picture of the same size and set-up, with no turns of its own.
    var tiles: [[Range<Int>]] = []
    var config: [UInt8]?
    var tileSize: PixelSize?
    for tile in tileIDs {
      // A single picture's own crop and turns are the item's (read below); a grid's tiles have none.
      guard types[tile] == "hvc1", let props = properties(of: tile),
        tile == id || (props.transforms.isEmpty && props.clap == nil),
        let hvcC = props.hvcC, let s = props.size, tileSize == nil || tileSize == s,
        let location = locations[tile], location.method == 0, !location.extents.isEmpty,
        location.extents.allSatisfy({ $0.upperBound <= bytes.count })
      else { return nil }
      let box = Array(bytes[hvcC.body..<hvcC.end])
      guard config == nil || config == box else { return nil }
      config = box
      tileSize = s
      tiles.append(location.extents)
    }
    guard let config, let tileSize, let setup = HEVCConfiguration(config),
      let sequence = HEVCSequenceParameters.find(in: setup.parameterSets)
    else { return nil }
    // The tiles must cover the grid's output (libheif's rule too).
    guard tileSize.width * columns >= size.width, tileSize.height * rows >= size.height,
      tileSize.width * (columns - 1) < size.width, tileSize.height * (rows - 1) < size.height
    else { return nil }
    var crop: (x: Int, y: Int, width: Int, height: Int)?
    if let clap = own.clap {
      guard !own.clapAfterTransform, let c = Self.cleanAperture(clap, of: size) else { return nil }
      crop = c
    }
    return HEVCItem(
      tiles: tiles, parameterSets: setup.parameterSets, lengthSize: setup.lengthSize,
      chromaFormat: setup.chromaFormat, lumaBits: setup.lumaBits, chromaBits: setup.chromaBits,
      columns: columns, rows: rows, tileSize: tileSize, size: size, crop: crop, transforms: own.transforms,
      nclx: own.nclx, sequence: sequence)
  }

  /// `clap`'s window in whole pixels, rounded as libheif 1.15 rounds it: the width and height to the
  /// nearest integer, the left and top edge from the centre offset, rounded down; nil when it leaves the
  /// picture or has a zero denominator.
  static func cleanAperture(_ v: [Int64], of size: PixelSize) -> (x: Int, y: Int, width: Int, height: Int)? {
    guard v[1] > 0, v[3] > 0, v[5] > 0, v[7] > 0 else { return nil }
    func rounded(_ n: Int64, _ d: Int64) -> Int64 { (2 * n + d) / (2 * d) }
    let width = rounded(v[0], v[1])
    let height = rounded(v[2], v[3])
    // left = horizOff + (W - 1) / 2 - (width - 1) / 2, as fractions; floor.
    func edge(offN: Int64, offD: Int64, full: Int, clean: Int64) -> Int64 {
      let num = 2 * offN + offD * (Int64(full) - 1) - offD * (clean - 1)
      let den = 2 * offD
      return num >= 0 ? num / den : -((-num + den - 1) / den)
    }
    let x = edge(offN: v[4], offD: v[5], full: size.width, clean: width)
    let y = edge(offN: v[6], offD: v[7], full: size.height, clean: height)
    guard width > 0, height > 0, x >= 0, y >= 0, x + width <= Int64(size.width),
      y + height <= Int64(size.height)
    else { return nil }
    return (Int(x), Int(y), Int(width), Int(height))
  }
}

/// What the HEVC route needs of an `hvcC` box.
struct HEVCConfiguration {
  var parameterSets: [UInt8] = []
  var lengthSize: Int
  var chromaFormat: Int
  var lumaBits: Int
  var chromaBits: Int

  init?(_ box: [UInt8]) {
    guard box.count >= 23, box[0] == 1 else { return nil }
    chromaFormat = Int(box[16] & 3)
    lumaBits = Int(box[17] & 7) + 8
    chromaBits = Int(box[18] & 7) + 8
    lengthSize = Int(box[21] & 3) + 1
    guard lengthSize != 3 else { return nil }
    var r = Reader(bytes: box, at: 22, end: box.count)
    guard let arrays = r.u8() else { return nil }
    for _ in 0..<arrays {
      guard r.skip(1), let count = r.u16() else { return nil }
      for _ in 0..<count {
        guard let length = r.u16(), let unit = r.take(Int(length)) else { return nil }
        let n = UInt32(length)
        parameterSets += [UInt8(n >> 24), UInt8(n >> 16 & 255), UInt8(n >> 8 & 255), UInt8(n & 255)]
        parameterSets += unit
      }
    }
  }
}

/// Big-endian reads within [at, end) that fail instead of running past it.
struct Reader {
  let bytes: [UInt8]
  var at: Int
  let end: Int

  mutating func uint(_ count: Int) -> Int? {
    guard count >= 0, count <= 8, at + count <= end else { return nil }
    defer { at += count }
    return bytes[at..<(at + count)].reduce(0) { $0 << 8 | Int($1) }
  }
  mutating func u8() -> UInt8? { uint(1).map { UInt8($0) } }
  mutating func u16() -> UInt16? { uint(2).map { UInt16($0) } }
  mutating func u32() -> UInt32? { uint(4).map { UInt32($0) } }
  /// A 16-bit item ID for version 0 boxes, else 32-bit.
  mutating func id(_ version: UInt8) -> UInt32? { version == 0 ? u16().map(UInt32.init) : u32() }
  mutating func skip(_ count: Int) -> Bool {
    guard at + count <= end else { return false }
    at += count
    return true
  }
  mutating func take(_ count: Int) -> ArraySlice<UInt8>? {
    guard at + count <= end else { return nil }
    defer { at += count }
    return bytes[at..<(at + count)]
  }
  mutating func fourCC() -> String? { take(4).map { String(decoding: $0, as: UTF8.self) } }
}

extension HEVCItem {
  /// The turns as one EXIF orientation: found by applying them to a small picture whose every pixel is
  /// different and asking which orientation shows the same.
  public var orientation: Orientation {
    let (w, h) = (2, 3)
    // A picture as rows of labels.
    var picture = (0..<h).map { y in (0..<w).map { x in y * w + x } }
    for transform in transforms {
      switch transform {
      case .rotation(let quarterTurns):
        for _ in 0..<(quarterTurns & 3) {
          // Anticlockwise: the new row y is the old column width-1-y, read top to bottom.
          let old = picture
          let width = old[0].count
          picture = (0..<width).map { y in (0..<old.count).map { x in old[x][width - 1 - y] } }
        }
      case .mirror(let axis):
        picture = axis == 0 ? picture.map { $0.reversed() } : picture.reversed()
      }
    }
    // Every composition of turns and mirrors is one of the eight.
    return Orientation.allCases.first { o in
      let upright = o.uprightSize(of: PixelSize(width: w, height: h))
      guard upright.width == picture[0].count, upright.height == picture.count else { return false }
      for y in 0..<upright.height {
        for x in 0..<upright.width {
          let s = o.storedCoordinate(x: x, y: y, w: w, h: h)
          if picture[y][x] != s.y * w + s.x { return false }
        }
      }
      return true
    } ?? .up
  }
}
