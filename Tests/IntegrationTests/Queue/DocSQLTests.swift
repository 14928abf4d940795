import Foundation
import Queue
import Testing

/// Every SQL block of the README and the guides runs, as the role its text assigns it: each block starts
/// with `-- as thumbd_enqueuer` (the backend), `-- as thumbd_admin` (an operator) or `-- as
/// thumbd_worker`, and is run by a login member of that role after deploy/sql/roles.sql, on a database
/// with a few jobs in it. A block that names no role fails, and so does one its role may not run: the
/// docs and the grants cannot drift apart. A block that shows a refusal says so after its role
/// (`-- as thumbd_admin (an operator): refused with 23514`) and must fail with that SQLSTATE. Each block runs in a transaction that is rolled back, so that
/// one block's change (a profile, a cancelled job) does not decide the next one's.
@Suite(.serialized, .enabled(if: TestDatabase.adminURL != nil, Comment(rawValue: TestDatabase.skipReason)))
struct DocSQLTests {
  static let documents = ["README.md", "docs/integration.md", "docs/admin-sql.md", "docs/operations.md"]
  static let roles: Set<String> = ["thumbd_enqueuer", "thumbd_admin", "thumbd_worker"]

  struct Block: CustomStringConvertible {
    var document: String
    var line: Int
    var role: String?
    /// The SQLSTATE the block shows being refused with; nil: it must run.
    var refusal: String?
    var text: String
    var description: String { "\(document):\(line)" }
  }

  /// The ```sql blocks of a Markdown file (indented ones in lists too), with the role each names.
  static func blocks(of document: String) throws -> [Block] {
    let text = try String(
      contentsOf: TestDatabase.repoRoot.appendingPathComponent(document), encoding: .utf8)
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    var blocks: [Block] = []
    var index = 0
    while index < lines.count {
      let fence = lines[index].trimmingCharacters(in: .whitespaces)
      guard fence == "```sql" else {
        index += 1
        continue
      }
      let indent = lines[index].prefix { $0 == " " }.count
      var body: [String] = []
      index += 1
      while index < lines.count, lines[index].trimmingCharacters(in: .whitespaces) != "```" {
        body.append(String(lines[index].dropFirst(min(indent, lines[index].prefix { $0 == " " }.count))))
        index += 1
      }
      let first = body.first { !$0.trimmingCharacters(in: .whitespaces).isEmpty } ?? ""
      let role = first.wholeMatch(of: /--\s*as (thumbd_[a-z]+)\b.*/).map { String($0.1) }
      let refusal = first.firstMatch(of: /refused with ([0-9A-Z]{5})/).map { String($0.1) }
      blocks.append(
        Block(
          document: document, line: index - body.count, role: role, refusal: refusal,
          text: body.joined(separator: "\n")))
      index += 1
    }
    return blocks
  }

  @Test func everySQLBlockNamesItsRoleAndRunsAsIt() throws {
    let owner = try TestDatabase.create()
    let connection = try PostgresConnection(conninfo: owner)
    defer { connection.close() }
    let script = try String(
      contentsOf: TestDatabase.repoRoot.appendingPathComponent("deploy/sql/roles.sql"), encoding: .utf8)
    try connection.execute(script: script)
    let tag = UInt32.random(in: 0...UInt32.max)
    var logins: [String: String] = [:]
    for role in Self.roles {
      let login = "\(role.dropFirst("thumbd_".count))_\(tag)"
      try connection.execute(script: "CREATE ROLE \(login) LOGIN IN ROLE \(role)")
      var components = try #require(URLComponents(string: owner))
      components.user = login
      logins[role] = components.string
    }
    // Something for the blocks to find: jobs in each state, a photo with thumbnails, an event.
    try connection.execute(
      script: """
        SELECT thumbs.enqueue('https://photos.example.com/u/42/IMG_2041.jpg', external_id => 'photo-42');
        SELECT thumbs.enqueue('https://photos.example.com/u/42/IMG_2042.jpg', external_id => 'photo-41');
        SELECT thumbs.enqueue('https://photos.example.com/u/42/IMG_2043.jpg');
        UPDATE thumbs.jobs SET state = 'failed', finished_at = now(), error_code = 'not_found',
               last_error = 'answered HTTP 404' WHERE external_id = 'photo-41';
        """)

    var checked = 0
    for document in Self.documents {
      let blocks = try Self.blocks(of: document)
      #expect(!blocks.isEmpty, "\(document) has SQL blocks")
      for block in blocks {
        guard let role = block.role, Self.roles.contains(role), let login = logins[role] else {
          Issue.record(
            "\(block): a SQL block must start with `-- as thumbd_enqueuer`, `-- as thumbd_admin` or `-- as thumbd_worker`"
          )
          continue
        }
        let session = try PostgresConnection(conninfo: login)
        defer { session.close() }
        do {
          try session.execute(script: "BEGIN;\n\(block.text)\n;ROLLBACK;")
          if let refusal = block.refusal {
            Issue.record("\(block) as \(role) ran, but the text shows it refused with \(refusal)")
          }
          checked += 1
        } catch  where block.refusal != nil {
          #expect(error.sqlState == block.refusal, "\(block) as \(role): \(error)")
          checked += 1
        } catch {
          Issue.record("\(block) as \(role): \(error)\n\(block.text)")
        }
      }
    }
    #expect(checked >= 50, "\(checked) blocks ran")
  }

  /// The blocks of the backend's guide are the backend's: the guide never asks it for an operator's
  /// powers.
  @Test func theIntegrationGuideIsTheBackendsAlone() throws {
    for block in try Self.blocks(of: "docs/integration.md") {
      #expect(block.role == "thumbd_enqueuer", "\(block)")
    }
  }
}
