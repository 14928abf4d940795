/// Source URLs and their identities: the worker's `SourceURL.identity` and the database's
/// `thumbs.source_identity` must both give these answers (SourceURLTests, SourceIdentityTests).
public let sourceIdentityCases: [(url: String, identity: String)] = [
  ("https://photos.example/a.jpg", "https://photos.example/a.jpg"),
  ("https://photos.example/a.jpg?size=large", "https://photos.example/a.jpg?size=large"),
  (
    "https://bucket.s3.amazonaws.com/a.jpg?X-Amz-Algorithm=AWS4-HMAC-SHA256"
      + "&X-Amz-Credential=AKIAEXAMPLE%2F20261124%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20261124T120000Z"
      + "&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature=0123abcd",
    "https://bucket.s3.amazonaws.com/a.jpg"
  ),
  (
    "https://bucket.s3.amazonaws.com/a.jpg?versionId=7&X-Amz-Signature=ff&X-Amz-Security-Token=tok&x=1",
    "https://bucket.s3.amazonaws.com/a.jpg?versionId=7&x=1"
  ),
  (
    "https://bucket.s3.amazonaws.com/a.jpg?AWSAccessKeyId=AKIA&Expires=1790000000&Signature=abc%3D",
    "https://bucket.s3.amazonaws.com/a.jpg"
  ),
  ("https://photos.example/a.jpg?", "https://photos.example/a.jpg"),
  ("https://photos.example/a.jpg?X-Amz-Date=1#frag", "https://photos.example/a.jpg#frag"),
  ("https://photos.example/a.jpg#frag?X-Amz-Date=1", "https://photos.example/a.jpg#frag?X-Amz-Date=1"),
  ("https://photos.example/a.jpg?a=1&&b=2", "https://photos.example/a.jpg?a=1&&b=2"),
  // Names are compared exactly: another case is another parameter.
  ("https://photos.example/a.jpg?x-amz-signature=1", "https://photos.example/a.jpg?x-amz-signature=1"),
  ("https://photos.example/a.jpg?Signature", "https://photos.example/a.jpg"),
  ("https://photos.example/a.jpg?SignatureV=2", "https://photos.example/a.jpg?SignatureV=2"),
  ("https://user:secret@photos.example/a.jpg", "https://user:secret@photos.example/a.jpg"),
]
