// The EXIF family: ExifReader's orientation readers, and JPEGSegments' ICC profile reader.

func fuzzExif(_ input: FuzzInput) {
  let bytes = input.bytes

  let jpeg = ExifReader.jpegOrientation(bytes)
  require(ExifReader.jpegOrientation(input.raw) == jpeg, "the [UInt8] and raw-buffer readers disagree")
  if let jpeg {
    require(bytes.count >= 4 && bytes[0] == 0xFF && bytes[1] == 0xD8, "orientation \(jpeg) without SOI")
    require(ExifReader.jpegOrientation(input.extended) == jpeg, "appended bytes changed \(jpeg)")
  }

  let tiff = ExifReader.tiffOrientation(input.raw)
  if let tiff {
    require(
      bytes.starts(with: [0x49, 0x49, 0x2A, 0x00]) || bytes.starts(with: [0x4D, 0x4D, 0x00, 0x2A]),
      "TIFF orientation \(tiff) without a TIFF header")
    let extended = input.extended.withUnsafeBytes { ExifReader.tiffOrientation($0) }
    require(extended == tiff, "appended bytes changed TIFF orientation \(tiff)")
  }

  let icc = JPEGSegments.iccProfile(input.raw)
  require(JPEGSegments.iccProfile(bytes) == icc, "the [UInt8] and raw-buffer ICC readers disagree")
  if let icc {
    require(bytes.starts(with: [0xFF, 0xD8]), "an ICC profile without SOI")
    require(icc.count < bytes.count, "an ICC profile longer than its file")
  }
}
