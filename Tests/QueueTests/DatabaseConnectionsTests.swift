import Testing

@testable import Queue

/// The connections of one process learn together (DatabaseConnections): one generation for all, and the
/// host of a multi-host URL that answered last tried first.
@Suite struct DatabaseConnectionsTests {
  @Test func theFirstOfSeveralFailuresStartsOneNewGeneration() {
    let group = DatabaseConnections()
    let seen = group.generation
    group.lost(seenIn: seen)
    group.lost(seenIn: seen)  // another connection of the same generation, failing together
    #expect(group.generation == seen + 1)
    group.lost(seenIn: group.generation)
    #expect(group.generation == seen + 2)
  }

  @Test func theHostThatAnsweredLastGoesFirst() {
    let group = DatabaseConnections()
    let url = "postgresql://thumbd@pg-a:5432,pg-b:5433,pg-c:5434/photos?target_session_attrs=read-write"
    #expect(group.hostOrder(for: url).isEmpty, "the URL's own order until another host answers")
    group.prefer(1)
    let order = Dictionary(uniqueKeysWithValues: group.hostOrder(for: url).map { ($0.key, $0.value) })
    #expect(order == ["host": "pg-b,pg-c,pg-a", "port": "5433,5434,5432"])
    // One port for every host stays as it is.
    let conninfo = "host=pg-a,pg-b port=5432 dbname=photos"
    let shared = Dictionary(uniqueKeysWithValues: group.hostOrder(for: conninfo).map { ($0.key, $0.value) })
    #expect(shared == ["host": "pg-b,pg-a", "port": "5432"])
    // A single host: nothing to reorder.
    #expect(group.hostOrder(for: "postgresql://thumbd@db/photos").isEmpty)
  }
}
