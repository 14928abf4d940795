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

/// Source URLs and why each can never be fetched (nil: worth a try): the worker's `SourceURL.problem`
/// and the database's `thumbs.source_problem` (which `thumbs.enqueue` refuses with) must both give these
/// answers (SourceURLTests, BackendChecksTests).
public let sourceProblemCases: [(url: String, problem: String?)] = [
  ("https://photos.example/u/42/a.jpg", nil),
  ("HTTP://PHOTOS.EXAMPLE/a.jpg", nil),
  ("http://user:pass@photos.example:8080/a.jpg?x=1#f", nil),
  ("http://[::1]:8080/a.jpg", nil),
  ("http://photos.example:/a.jpg", nil),
  ("http://photos.example", nil),
  ("s3://photo-originals/u/42/IMG_2041.HEIC", nil),
  ("s3://photo-originals/u/42/My photo ü.jpg", nil),
  ("", "is empty"),
  ("not a url", "is not an absolute URL (scheme://host/path)"),
  ("photos.example/a.jpg", "is not an absolute URL (scheme://host/path)"),
  ("://photos.example/a.jpg", "is not an absolute URL (scheme://host/path)"),
  ("1http://photos.example/a.jpg", "is not an absolute URL (scheme://host/path)"),
  ("ftp://photos.example/a.jpg", "has the scheme ftp, which thumbd does not read (http, https, s3)"),
  ("FILE:///etc/passwd", "has the scheme file, which thumbd does not read (http, https, s3)"),
  ("https://photos.example/a b.jpg", "contains a space or a control character"),
  ("https://photos.example/a.jpg\n", "contains a space or a control character"),
  ("http:///nohost.jpg", "has no host"),
  ("http://:80/a.jpg", "has no host"),
  ("http://user@/a.jpg", "has no host"),
  ("http://[]/a.jpg", "has no host"),
  ("http://photos.example:0/a.jpg", "has an invalid port"),
  ("http://photos.example:65536/a.jpg", "has an invalid port"),
  ("http://photos.example:1234567/a.jpg", "has an invalid port"),
  ("http://photos.example:80x/a.jpg", "has an invalid host or port"),
  ("http://photos.example:1:2/a.jpg", "has an invalid host or port"),
  ("http://[::1/a.jpg", "has an invalid host or port"),
  ("http://a]b/a.jpg", "has an invalid host or port"),
  ("s3://photo-originals/", "does not name an object (s3://BUCKET/KEY)"),
  ("s3://photo-originals", "does not name an object (s3://BUCKET/KEY)"),
  ("s3:///key.jpg", "does not name an object (s3://BUCKET/KEY)"),
]

/// Profile specs, valid and not: the worker's `ProfileSpec.problems` and the database's
/// `thumbs.check_profile` must give the same list for each (BackendChecksTests); ProfileSpecTests says
/// what some of them are.
public let profileSpecCases: [String] = [
  #"{"variants": [{"name": "large", "width": 1600, "height": 1600, "fit": "inside", "format": "jpeg", "quality": 82}]}"#,
  #"{"variants": [{"name": "a", "width": 5.0, "height": 5, "quality": null, "crop": null}]}"#,
  #"{"variants": [{"name": "j", "width": 8, "height": 8, "subsampling": "4:4:4", "progressive": true}]}"#,
  #"{"variants": [{"name": "v", "width": 8, "height": 8, "format": "avif", "speed": 4, "quality": 1e2}]}"#,
  #"{"variants": [{"name": "c", "width": 8, "height": 8, "fit": "cover", "crop": "attention"}]}"#,
  #"[1, 2]"#,
  #""variants""#,
  #"null"#,
  #"{}"#,
  #"{"variants": []}"#,
  #"{"variants": {}}"#,
  #"{"variants": null}"#,
  #"{"variants": [{"name": "a", "width": 5, "height": 5}], "comment": "x", "Zeta": 1}"#,
  #"{"variants": [1, null, "a", [], {"name": "ok", "width": 5, "height": 5}]}"#,
  #"{"variants": [{"name": "a", "width": 5, "height": 5, "formatt": "webp", "Qualty": 1}]}"#,
  #"{"variants": [{"name": "A B", "width": 5, "height": 5}, {"name": "", "width": 5, "height": 5}]}"#,
  #"{"variants": [{"name": 7, "width": 5, "height": 5}, {"width": 5, "height": 5}]}"#,
  #"{"variants": [{"name": "a", "width": 5, "height": 5}, {"name": "a", "width": 5, "height": 5}]}"#,
  #"{"variants": [{"name": "a", "width": 0, "height": 5}, {"name": "b", "width": 8193, "height": 5}]}"#,
  #"{"variants": [{"name": "a", "width": 5.5, "height": 5}, {"name": "b", "width": "5", "height": 5}]}"#,
  #"{"variants": [{"name": "a", "width": 5}, {"name": "b", "width": true, "height": 5}]}"#,
  #"{"variants": [{"name": "a", "width": 5, "height": 5, "fit": "stretch"}, {"name": "b", "width": 5, "height": 5, "fit": 1}]}"#,
  #"{"variants": [{"name": "a", "width": 5, "height": 5, "format": "gif"}]}"#,
  #"{"variants": [{"name": "a", "width": 5, "height": 5, "quality": 101}, {"name": "b", "width": 5, "height": 5, "quality": "80"}]}"#,
  #"{"variants": [{"name": "a", "width": 5, "height": 5, "quality": 80.5}, {"name": "b", "width": 5, "height": 5, "quality": 0}]}"#,
  #"{"variants": [{"name": "a", "width": 5, "height": 5, "subsampling": "4:2:2"}]}"#,
  #"{"variants": [{"name": "a", "width": 5, "height": 5, "progressive": 1}]}"#,
  #"{"variants": [{"name": "a", "width": 5, "height": 5, "format": "webp", "progressive": true}]}"#,
  #"{"variants": [{"name": "a", "width": 5, "height": 5, "format": "png", "subsampling": "4:2:0"}]}"#,
  #"{"variants": [{"name": "a", "width": 5, "height": 5, "format": "webp", "speed": 4}]}"#,
  #"{"variants": [{"name": "a", "width": 5, "height": 5, "format": "avif", "speed": 10}]}"#,
  #"{"variants": [{"name": "a", "width": 5, "height": 5, "format": "avif", "speed": -1}]}"#,
  #"{"variants": [{"name": "a", "width": 5, "height": 5, "crop": "attention"}]}"#,
  #"{"variants": [{"name": "a", "width": 5, "height": 5, "fit": "cover", "crop": "faces"}]}"#,
  #"{"variants": [{"name": "a", "width": 5, "height": 5, "fit": "fill", "crop": "centre"}]}"#,
  #"{"variants": [{"name": "ok", "width": 5, "height": 5}, {"name": "b", "width": 5, "height": 5, "fit": "cover", "crop": 3}]}"#,
  #"{"poster": {"at": 2.5}, "variants": [{"name": "a", "width": 5, "height": 5}]}"#,
  #"{"poster": {"at": 0}, "variants": [{"name": "a", "width": 5, "height": 5}]}"#,
  #"{"poster": null, "variants": [{"name": "a", "width": 5, "height": 5}]}"#,
  #"{"poster": {"at": -1}, "variants": [{"name": "a", "width": 5, "height": 5}]}"#,
  #"{"poster": {"at": 86401}, "variants": [{"name": "a", "width": 5, "height": 5}]}"#,
  #"{"poster": {"at": "2"}, "variants": [{"name": "a", "width": 5, "height": 5}]}"#,
  #"{"poster": {"at": 2, "frame": 1}, "variants": [{"name": "a", "width": 5, "height": 5}]}"#,
  #"{"poster": {}, "variants": [{"name": "a", "width": 5, "height": 5}]}"#,
  #"{"poster": 2, "variants": [{"name": "a", "width": 5, "height": 5}]}"#,
  #"{"poster": {"at": 2}, "variants": []}"#,
  #"{"poster": {"at": 2}, "variants": [{"name": "a", "width": 0, "height": 5}]}"#,
]
