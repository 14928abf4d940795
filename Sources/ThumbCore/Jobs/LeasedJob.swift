/// A job this worker holds a lease on, as the lease statement returned it. `leaseToken` fences every
/// write: a write whose token no longer matches (lease expired and re-leased, job cancelled) changes
/// nothing.
public struct LeasedJob: Sendable, Equatable {
  public var id: Int64
  public var sourceURL: String
  public var profileName: String
  public var profileSpec: String
  /// The profile's version with that spec (it goes up with each change of the spec): recorded with the
  /// photo's current thumbnails, so that a later version makes them stale (thumbs.rerender).
  public var specVersion: Int64?
  public var attempt: Int
  public var maxAttempts: Int
  public var leaseToken: String
  /// The user or tenant the job is for (thumbs.enqueue's `owner`); nil: none.
  public var owner: String?

  public init(
    id: Int64, sourceURL: String, profileName: String = "default", profileSpec: String = "",
    specVersion: Int64? = nil, attempt: Int = 1, maxAttempts: Int = 3, leaseToken: String,
    owner: String? = nil
  ) {
    self.id = id
    self.sourceURL = sourceURL
    self.profileName = profileName
    self.profileSpec = profileSpec
    self.specVersion = specVersion
    self.attempt = attempt
    self.maxAttempts = maxAttempts
    self.leaseToken = leaseToken
    self.owner = owner
  }

  /// Its lease: the job and the token that fences its writes.
  public var lease: JobLease { JobLease(id: id, token: leaseToken) }
}
