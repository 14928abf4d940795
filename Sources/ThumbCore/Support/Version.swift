/// The version reported by `thumbd --version` and recorded in `thumbs.workers`.
public enum ThumbdVersion {
  public static let current = "0.2.0"
}
