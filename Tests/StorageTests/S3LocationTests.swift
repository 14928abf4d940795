import Testing

@testable import Storage

/// Where an object's URL is, for every addressing style and endpoint.
@Suite struct S3LocationTests {
  func parse(
    _ text: String, endpoint: String? = nil, region: String = "eu-west-1", pathStyle: Bool = false
  ) -> S3Location? {
    try? S3Location.parse(text, endpoint: endpoint, region: region, pathStyle: pathStyle).get()
  }

  func problem(_ text: String, endpoint: String? = nil) -> String? {
    if case .failure(let error) = S3Location.parse(
      text, endpoint: endpoint, region: "us-east-1", pathStyle: false)
    {
      return error.description
    }
    return nil
  }

  @Test func awsDefaultIsVirtualHostedRegional() throws {
    let location = try #require(parse("s3://my-bucket/thumbs/v1"))
    #expect(location.bucket == "my-bucket" && location.prefix == "thumbs/v1" && location.endpoint == nil)
    #expect(
      location.url(of: "ab/cd/x.jpg") == "https://my-bucket.s3.eu-west-1.amazonaws.com/thumbs/v1/ab/cd/x.jpg")
    #expect(location.identity == "s3://my-bucket/thumbs/v1")
  }

  @Test func pathStyleUnderAnEndpointWithAPort() throws {
    let location = try #require(
      parse("s3://thumbs.example/p", endpoint: "http://minio.local:9000/ignored/path", pathStyle: true))
    #expect(location.endpoint == "http://minio.local:9000")
    #expect(location.url(of: "ab/cd/x.jpg") == "http://minio.local:9000/thumbs.example/p/ab/cd/x.jpg")
    #expect(location.identity == "s3://thumbs.example/p at http://minio.local:9000")
    let aws = try #require(parse("s3://b12/p", pathStyle: true))
    #expect(aws.url(of: "k") == "https://s3.eu-west-1.amazonaws.com/b12/p/k")
  }

  @Test func virtualHostedUnderACustomEndpoint() throws {
    let location = try #require(parse("s3://bucket/p", endpoint: "HTTPS://r2.example.com:8443"))
    #expect(location.url(of: "k.jpg") == "https://bucket.r2.example.com:8443/p/k.jpg")
  }

  @Test func prefixesAreNormalisedAndMayBeEmpty() throws {
    #expect(parse("s3://bucket")?.prefix == "")
    #expect(parse("s3://bucket/")?.prefix == "")
    #expect(parse("s3://bucket//a//b/")?.prefix == "a/b")
    let root = try #require(parse("s3://bucket"))
    #expect(root.url(of: "ab/k.jpg") == "https://bucket.s3.eu-west-1.amazonaws.com/ab/k.jpg")
    #expect(root.objectName("ab/k.jpg") == "ab/k.jpg")
    #expect(root.identity == "s3://bucket")
    #expect(parse("S3://bucket/A_b-c.d/e")?.prefix == "A_b-c.d/e")
  }

  @Test(arguments: [
    "s3://ab/p", "s3://\(String(repeating: "a", count: 64))/p", "s3://My-Bucket/p", "s3://my_bucket/p",
    "s3://-bucket/p", "s3:///p", "s3://bucket:1/p",
  ])
  func invalidBucketNamesAreRefused(text: String) {
    #expect(problem(text)?.contains("is not a valid bucket name") == true, "\(text)")
  }

  @Test func edgeBucketNamesAreAccepted() {
    #expect(parse("s3://abc") != nil)
    #expect(parse("s3://\(String(repeating: "a", count: 63))") != nil)
    #expect(parse("s3://1bucket.with.dots") != nil)
  }

  @Test(arguments: [
    "s3://bucket/a b", "s3://bucket/a?b", "s3://bucket/é", "s3://bucket/a%20b", "s3://bucket/a+b",
  ])
  func prefixesNeedingEscapesAreRefused(text: String) {
    #expect(problem(text)?.contains("the prefix") == true, "\(text)")
  }

  @Test func otherURLsAndEndpointsAreRefused() {
    #expect(problem("file:///srv/thumbs") == "is not an s3:// URL")
    #expect(problem("https://bucket/p") == "is not an s3:// URL")
    #expect(problem("s3://bucket/p", endpoint: "ftp://host")?.contains("is not an http(s)://host") == true)
    #expect(
      problem("s3://bucket/p", endpoint: "localhost:9000")?.contains("is not an http(s)://host") == true)
    #expect(problem("s3://bucket/p", endpoint: "") == nil, "an empty endpoint means AWS's")
  }
}
