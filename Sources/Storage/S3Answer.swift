import ThumbCore

/// What an S3 answer means for the job: done, try again in this attempt, or stop.
///
/// Refusals no retry cures are the configuration's (`storage_refused`): wrong or expired credentials,
/// a missing permission, a missing bucket, a wrong region or endpoint. Throttling, server errors and
/// timeouts pass (`storage_failed`, retried in the attempt, then by the queue).
public enum S3Answer: Sendable, Equatable {
  case ok
  case missing
  case refused(code: String)
  case transient(code: String, retryAfter: Double?)

  /// Error codes S3 and its imitators send for a configuration problem, whatever the status.
  static let configurationCodes: Set<String> = [
    "AccessDenied", "AllAccessDisabled", "SignatureDoesNotMatch", "InvalidAccessKeyId", "InvalidToken",
    "ExpiredToken", "TokenRefreshRequired", "NoSuchBucket", "AuthorizationHeaderMalformed",
    "PermanentRedirect", "InvalidBucketName", "AccountProblem", "InvalidSecurity", "MissingSecurityHeader",
    "InvalidRequest", "NotSignedUp", "InvalidObjectState", "MethodNotAllowed",
  ]

  /// Classifies a status and the body's `<Code>` (HEAD answers have no body).
  public static func classify(status: Int, body: String, retryAfter: Double? = nil) -> S3Answer {
    let code = errorCode(in: body)
    switch status {
    case 200..<300: return .ok
    case 404 where code == nil || code == "NoSuchKey": return .missing
    case 408, 429, 500..<600:
      return .transient(code: code ?? "HTTP \(status)", retryAfter: retryAfter)
    default:
      if let code, !configurationCodes.contains(code), status == 400 || status == 409 || status == 412 {
        // A request this worker got wrong (a digest mismatch, a race with a conflicting write): the
        // next attempt makes it afresh.
        return .transient(code: code, retryAfter: nil)
      }
      return .refused(code: code ?? statusName(status))
    }
  }

  /// The text of the first `<Code>` element of an S3 error document.
  public static func errorCode(in body: String) -> String? {
    guard let code = S3XML.elements("Code", in: Substring(body)).first,
      !code.isEmpty, code.count <= 64, code.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." })
    else { return nil }
    return String(code)
  }

  /// A name for a bodiless refusal (HEAD): S3's usual code for that status.
  static func statusName(_ status: Int) -> String {
    switch status {
    case 301, 307: return "PermanentRedirect"
    case 400: return "BadRequest"
    case 401: return "Unauthorized"
    case 403: return "AccessDenied"
    case 404: return "NoSuchBucket"
    case 405: return "MethodNotAllowed"
    default: return "HTTP \(status)"
    }
  }
}
