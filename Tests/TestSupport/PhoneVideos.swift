public import Foundation

/// Phone-sized clips (Tests/Support/phone-videos.py): a second of black, then a moving pattern with
/// grain, in the sizes and codecs phones record. Made once per test process for the kinds asked, into a
/// temporary folder; nil where ffmpeg is missing (VideoMatrix.skipReason).
public enum PhoneVideos {
  public static func folder(kinds: [String], seconds: Double = 2.5) -> URL? {
    guard VideoMatrix.isAvailable else { return nil }
    return HEIFMatrix.generatedFolder(
      script: "phone-videos.py", name: "thumbd-phone-videos",
      arguments: ["--kinds", kinds.joined(separator: ","), "--seconds", String(seconds)])
  }
}
