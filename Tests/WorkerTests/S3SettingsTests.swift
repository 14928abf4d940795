import Storage
import Testing

@testable import Worker

/// How the worker's options name the bucket, the endpoint and the credentials, and keep the secrets out
/// of every line.
@Suite struct S3SettingsTests {
  let base = ["DATABASE_URL": "postgresql://db/thumbs"]
  let credentials = ["AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": "wJalrSECRETKEYexample"]

  func resolve(_ arguments: [String], env: [String: String]) -> SettingsResolution {
    WorkerConfig.resolve(arguments: arguments, environment: base.merging(env) { $1 }, readFile: { _ in "" })
  }

  @Test func theS3OptionsReachTheStorageSettings() {
    let result = resolve(
      [
        "--storage", "s3://thumbs/v1", "--s3-endpoint", "http://127.0.0.1:9000", "--s3-path-style",
        "--s3-region", "eu-central-1",
      ],
      env: credentials)
    #expect(result.errors.isEmpty, "\(result.errors)")
    let storage = result.settings.storageSettings
    #expect(storage.url == "s3://thumbs/v1")
    #expect(storage.s3Endpoint == "http://127.0.0.1:9000")
    #expect(storage.s3PathStyle)
    #expect(storage.s3Region == "eu-central-1" && result.sources["s3-region"] == .flag)
    #expect(storage.s3Credentials?.accessKey == "AKIAEXAMPLE")
    #expect(storage.s3Credentials?.sessionToken == nil)

    let fromEnv = resolve(
      [],
      env: credentials.merging([
        "THUMBD_STORAGE": "s3://thumbs", "THUMBD_S3_ENDPOINT": "https://s3.example",
        "THUMBD_S3_PATH_STYLE": "1",
      ]) { $1 })
    #expect(fromEnv.errors.isEmpty, "\(fromEnv.errors)")
    #expect(
      fromEnv.settings.s3PathStyle
        && fromEnv.sources["s3-path-style"] == .environment("THUMBD_S3_PATH_STYLE"))
    #expect(fromEnv.settings.s3Endpoint == "https://s3.example")
  }

  @Test func theRegionFallsBackToAWSRegionThenUSEast1() {
    let fallback = resolve(
      ["--storage", "s3://thumbs"], env: credentials.merging(["AWS_REGION": "ap-south-1"]) { $1 })
    #expect(fallback.settings.s3Region == "ap-south-1")
    #expect(fallback.sources["s3-region"] == .environment("AWS_REGION"))
    #expect(fallback.report.contains("s3-region: ap-south-1  # env"), "\(fallback.report)")

    let ours = resolve(
      ["--storage", "s3://thumbs"],
      env: credentials.merging(["AWS_REGION": "ap-south-1", "THUMBD_S3_REGION": "eu-north-1"]) { $1 })
    #expect(ours.settings.s3Region == "eu-north-1")
    #expect(ours.sources["s3-region"] == .environment("THUMBD_S3_REGION"))

    let none = resolve(["--storage", "s3://thumbs"], env: credentials)
    #expect(none.settings.s3Region == "us-east-1" && none.sources["s3-region"] == .default)
  }

  @Test func missingCredentialsAreAnErrorOnStorage() {
    for env in [
      [:], ["AWS_ACCESS_KEY_ID": "AKIAEXAMPLE"], ["AWS_SECRET_ACCESS_KEY": "x", "AWS_ACCESS_KEY_ID": ""],
    ] {
      let result = resolve(["--storage", "s3://thumbs/v1"], env: env)
      #expect(result.errors.map(\.key) == ["storage"], "\(result.errors)")
      #expect(result.errors.first?.message.contains("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY") == true)
    }
    // A file:// store needs none.
    #expect(resolve(["--storage", "file:///srv/thumbs"], env: [:]).errors.isEmpty)
  }

  @Test func badS3ValuesAreErrorsOnTheirKeys() {
    let result = resolve(
      ["--storage", "s3://Bad_Bucket/p", "--s3-endpoint", "minio:9000", "--s3-region", "eu west"],
      env: credentials)
    let keys = Set(result.errors.map(\.key))
    #expect(keys == ["storage", "s3-endpoint", "s3-region"], "\(result.errors)")
    #expect(result.errors.first { $0.key == "storage" }?.message.contains("bucket name") == true)
  }

  @Test func theSecretAndTheTokenNeverAppearInTheReport() {
    let token = "IQoJb3JpZ2luX2VjEXAMPLETOKEN"
    let result = resolve(
      ["--storage", "s3://thumbs/v1"], env: credentials.merging(["AWS_SESSION_TOKEN": token]) { $1 })
    #expect(result.errors.isEmpty, "\(result.errors)")
    #expect(result.settings.s3Credentials?.sessionToken == token)
    let report = result.report.joined(separator: "\n")
    #expect(report.contains("storage: s3://thumbs/v1"), "\(report)")
    #expect(!report.contains("wJalrSECRETKEYexample"))
    #expect(!report.contains(token))
    let secrets = result.settings.secrets
    #expect(secrets.contains("wJalrSECRETKEYexample"))
    #expect(secrets.contains(token))
    #expect(!secrets.contains("AKIAEXAMPLE"), "the access key id is not a secret")
    // What the log formatter does with any line that carries them.
    let line = redacting("signing with wJalrSECRETKEYexample and \(token)", secrets: secrets)
    #expect(line == "signing with **** and ****")
    #expect(!"\(result.settings.s3Credentials!)".contains("wJalrSECRETKEYexample"))
    #expect(!"\(result.settings.s3Credentials!)".contains(token))
  }
}
