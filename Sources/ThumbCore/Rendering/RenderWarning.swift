/// Something a job that succeeded has to say about its original: written to the job's row
/// (`thumbs.jobs.warnings`), its `succeeded` event and webhook, and counted in
/// `thumbd_job_warnings_total`.
public struct RenderWarning: Sendable, Hashable, Codable {
  /// Stable, for programs: `truncated_image`.
  public var code: String
  /// For people: what was wrong and what the thumbnails show because of it.
  public var message: String

  public init(code: String, message: String) {
    self.code = code
    self.message = message
  }

  /// The file ended early; what arrived was rendered, the rows that did not are grey.
  public static let truncatedImage = "truncated_image"
  /// The file says it carries a clip (a Motion Photo) that is not where it says, or no video thumbd
  /// reads; the still was rendered alone.
  public static let motionUnreadable = "motion_unreadable"
}
