#!/usr/bin/env python3
"""Turns Sources/Queue/SQL/*.sql into Sources/Queue/Generated/Statements.swift (`SQL`), and `thumbd
bench`'s own Sources/thumbd/SQL/*.sql into Sources/thumbd/Generated/BenchStatements.swift (`BenchSQL`).

Each .sql file holds one statement, named like the file, under a header comment:

    -- name: lease_jobs
    -- Why the statement is written the way it is (becomes the Swift doc comment).
    -- params: worker_id text, limit bigint, lease_seconds float8, siblings bigint
    -- returns: id bigint, source_url text, ...
    -- deadline: quick
    WITH picked AS (... LIMIT @limit ...)

The statement names its parameters (`@limit`), as the `params:` line declares them; the generated text
sends them as `$1`, `$2`, ... in the header's order, and the Swift `Parameters` carries them as labels.
A parameter declared and not used, an `@name` not declared, or a positional `$1` is an error.
`params:` and `returns:` may be repeated to wrap a long list, or say `none`. A type is anything
PostgreSQL's regtype understands. `deadline:` says how long the worker waits for the answer (Queue's
StatementDeadline): `quick` (a few rows, on a job's path), `batch` (a batch of outcomes, a collection
or pruning step) or `none` (migrations and tools: only the connection's network bounds). Every
statement the worker runs says which; `thumbd bench`'s own default to `none`. SQLStatementTests prepares every statement on a migrated database
and checks the declared names and types against the server's own description of it.

    scripts/gen-sql.py           write the Swift file
    scripts/gen-sql.py --check   exit 1 if the Swift file is not what the .sql files make

Only the standard library: it runs wherever python3 does, in CI and in the tests.
"""

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class Target:
    """One folder of .sql files and the Swift enum generated from it, in the module that runs them."""

    def __init__(self, sql_dir, output, enum, access, imports, about, default_deadline=None):
        self.sql_dir, self.output, self.enum, self.access = ROOT / sql_dir, ROOT / output, enum, access
        self.imports, self.about, self.default_deadline = imports, about, default_deadline


TARGETS = [
    # The worker's and the tools' statements, public for every module that talks to the queue.
    Target("Sources/Queue/SQL", "Sources/Queue/Generated/Statements.swift", "SQL", "public ", [],
           "Every statement thumbd runs"),
    # `thumbd bench`'s own statements live with the benchmark code.
    Target("Sources/thumbd/SQL", "Sources/thumbd/Generated/BenchStatements.swift", "BenchSQL", "", ["Queue"],
           "The statements only `thumbd bench` runs", default_deadline="none"),
    # The console's pages and actions.
    Target("Sources/Console/SQL", "Sources/Console/Generated/ConsoleStatements.swift", "ConsoleSQL", "",
           ["Queue"], "The statements `thumbd console` runs"),
]
# Not a statement: the schema after all migrations (scripts/dump-schema.sh writes it).
SNAPSHOT = "schema.sql"
# What .swift-format allows; the generated file has to pass `swift format lint --strict`.
LINE_LENGTH = 110

DEADLINES = ("quick", "batch", "none")
SNAKE = re.compile(r"^[a-z][a-z0-9_]*$")
POSITIONAL = re.compile(r"\$(\d+)")
# `@name`, but not PostgreSQL's operators that contain @ (`@>`, `<@`, `@@`, `@-@`).
NAMED = re.compile(r"(?<![\w@<>#-])@([a-z][a-z0-9_]*)")


class SQLFileError(Exception):
    pass


# PostgreSQL's text format to Swift: what a parameter takes and a row field holds (Queue's
# PostgresTextValue conformances read and write them).
SCALARS = {
    "text": "String", "uuid": "String", "jsonb": "String", "json": "String", "timestamptz": "String",
    "interval": "String", "bigint": "Int64", "int8": "Int64", "int": "Int", "integer": "Int",
    "int4": "Int", "smallint": "Int", "float8": "Double", "double precision": "Double", "bool": "Bool",
    "boolean": "Bool",
}
# Acronyms keep their case inside a Swift name (source_url -> sourceURL, job_ids -> jobIDs).
ACRONYMS = {"id": "ID", "ids": "IDs", "url": "URL", "urls": "URLs", "ms": "MS", "sql": "SQL", "ttl": "TTL"}


def swift_type(declared):
    """`text` -> String, `bigint[]` -> [Int64], `text?` -> String?, `text?[]` -> [String?]; None: unknown."""
    base, array = (declared[:-2], True) if declared.endswith("[]") else (declared, False)
    optional = base.endswith("?")
    scalar = SCALARS.get(base.rstrip("?"))
    if scalar is None:
        return None
    element = scalar + ("?" if optional else "")
    return f"[{element}]" if array else element


def camel(name, upper_first=False):
    parts = name.split("_")
    words = [parts[0] if not upper_first else parts[0].capitalize()]
    if upper_first and parts[0] in ACRONYMS:
        words = [ACRONYMS[parts[0]]]
    words += [ACRONYMS.get(part, part.capitalize()) for part in parts[1:]]
    return "".join(words)


class Statement:
    def __init__(self, name, description, parameters, columns, text, deadline):
        self.name = name
        self.deadline = deadline
        self.description = description
        self.parameters = parameters  # [(name, type)]
        self.columns = columns  # [(name, type)]
        self.text = text

    @property
    def swift_name(self):
        """The statement's Swift type: lease_jobs -> LeaseJobs."""
        return camel(self.name, upper_first=True)


def parse_fields(path, key, values):
    """`a int, b text` (possibly over several lines) -> [("a", "int"), ("b", "text")]."""
    joined = ", ".join(v.strip().rstrip(",") for v in values)
    if joined.strip() == "none":
        return []
    fields = []
    for item in joined.split(","):
        item = item.strip()
        if not item:
            raise SQLFileError(f"{path}: empty entry in `{key}:`")
        parts = item.split(None, 1)
        if len(parts) != 2:
            raise SQLFileError(f"{path}: `{key}:` entry {item!r} needs a name and a type")
        name, type_ = parts[0], " ".join(parts[1].split())
        if swift_type(type_.replace("?", "")) is None and type_ != "void":
            raise SQLFileError(f"{path}: `{key}:` type {type_!r} has no Swift type here (see SCALARS)")
        if not SNAKE.match(name):
            raise SQLFileError(f"{path}: `{key}:` name {name!r} is not snake_case")
        if name in (f[0] for f in fields):
            raise SQLFileError(f"{path}: `{key}:` names {name!r} twice")
        fields.append((name, type_))
    return fields


def parse(path, default_deadline=None):
    lines = path.read_text(encoding="utf-8").split("\n")
    header = []
    while lines and lines[0].startswith("--"):
        header.append(lines.pop(0))
    name = None
    deadline = None
    description = []
    lists = {"params": [], "returns": []}
    for line in header:
        content = line[2:]
        if content.startswith(" "):
            content = content[1:]
        key, _, value = content.partition(":")
        if key == "name" and value:
            if name is not None:
                raise SQLFileError(f"{path}: two `name:` lines")
            name = value.strip()
        elif key == "deadline" and value:
            if deadline is not None:
                raise SQLFileError(f"{path}: two `deadline:` lines")
            deadline = value.strip()
            if deadline not in DEADLINES:
                raise SQLFileError(f"{path}: `deadline: {deadline}` is not one of {', '.join(DEADLINES)}")
        elif key in lists and value:
            lists[key].append(value)
        else:
            description.append(content.rstrip())
    if name is None:
        raise SQLFileError(f"{path}: the header has no `-- name:` line")
    if name != path.stem:
        raise SQLFileError(f"{path}: `-- name: {name}` must be the file's name ({path.stem})")
    if not SNAKE.match(name):
        raise SQLFileError(f"{path}: {name!r} is not snake_case")
    for key, values in lists.items():
        if not values:
            raise SQLFileError(f"{path}: the header has no `-- {key}:` line (say `none` if there is none)")
    deadline = deadline or default_deadline
    if deadline is None:
        raise SQLFileError(f"{path}: the header has no `-- deadline:` line ({', '.join(DEADLINES)})")
    while description and not description[-1]:
        description.pop()
    if not description:
        raise SQLFileError(f"{path}: the header says nothing about the statement")

    body = [line.rstrip() for line in lines]
    while body and not body[0]:
        body.pop(0)
    while body and not body[-1]:
        body.pop()
    if not body:
        raise SQLFileError(f"{path}: no statement after the header")
    text = "\n".join(body)
    if any(line.startswith("--") and line[2:].lstrip().startswith(("params:", "returns:", "name:", "deadline:"))
           for line in body):
        raise SQLFileError(f"{path}: a header line after the statement started")
    if text.endswith(";") or any(line.endswith(";") for line in body):
        raise SQLFileError(f"{path}: one statement per file, without a closing semicolon")
    if '"""#' in text or "\\#" in text:
        raise SQLFileError(f"{path}: the statement cannot be written as a Swift raw string literal")

    parameters = parse_fields(path, "params", lists["params"])
    columns = parse_fields(path, "returns", lists["returns"])
    return Statement(name, description, parameters, columns, numbered(path, text, parameters), deadline)


def numbered(path, text, parameters):
    """The statement's text with each `@name` replaced by its `$n`: the n-th name of `params:`."""
    if POSITIONAL.search(text):
        raise SQLFileError(f"{path}: write the parameter's name (`@name`), not `$n`")
    positions = {name: index + 1 for index, (name, _) in enumerate(parameters)}
    used = set(NAMED.findall(text))
    if unknown := sorted(used - positions.keys()):
        raise SQLFileError(f"{path}: the statement uses {', '.join('@' + n for n in unknown)}, "
                           "which `params:` does not declare")
    if unused := [name for name in positions if name not in used]:
        raise SQLFileError(f"{path}: `params:` declares {', '.join(unused)}, which the statement does not use")
    return NAMED.sub(lambda match: f"${positions[match.group(1)]}", text)


def swift_string(value):
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def packed(open_line, items, close_line, indent, trailing_comma=False):
    """`open_line` + items joined on one line + `close_line` if that fits, else the items packed into
    lines at `indent` + 2, between `open_line` and `close_line` on lines of their own (an array literal
    broken over lines ends its last item with a comma, as swift-format writes it)."""
    one_line = f"{open_line}{', '.join(items)}{close_line.strip()}"
    if len(one_line) < LINE_LENGTH:
        return [one_line]
    out = [open_line.rstrip()]
    inner = " " * (indent + 2)
    line = ""
    for position, item in enumerate(items):
        text = item + ("," if position < len(items) - 1 or trailing_comma else "")
        candidate = f"{line} {text}" if line else f"{inner}{text}"
        if line and len(candidate) > LINE_LENGTH:
            out.append(line)
            candidate = f"{inner}{text}"
        line = candidate
    out.append(line)
    out.append(" " * indent + close_line.strip())
    return out


def encoded(name, type_):
    """The Swift expression that puts a parameter into its text form (nil: SQL NULL)."""
    swift = swift_type(type_)
    if swift.startswith("["):
        return f"PostgresArray.literal({name})"
    if swift.endswith("?"):
        return f"{name}?.postgresText"
    return f"{name}.postgresText"


def render_parameters(statement):
    if not statement.parameters:
        return ["    public typealias Parameters = NoParameters"]
    fields = [(camel(n), swift_type(t), t) for n, t in statement.parameters]
    out = ["    public struct Parameters: StatementParameters {"]
    out += [f"      public var {name}: {swift}" for name, swift, _ in fields]
    out.append("")
    out += packed("      public init(", [f"{name}: {swift}" for name, swift, _ in fields], ") {", 6)
    out += [f"        self.{name} = {name}" for name, _, _ in fields]
    out.append("      }")
    out.append("")
    out.append("      public var values: [String?] {")
    out += packed("        [", [encoded(name, t) for name, _, t in fields], "]", 8, trailing_comma=True)
    out.append("      }")
    out.append("    }")
    return out


def render_row(statement):
    columns = [(n, t) for n, t in statement.columns if t != "void"]
    if not columns:
        return ["    public typealias Row = NoRow"]
    out = ["    public struct Row: StatementRow, Equatable {"]
    out += [f"      public var {camel(n)}: {swift_type(t)}" for n, t in columns]
    out.append("")
    # Memberwise too, so that a test can hand a service rows without a database.
    out += packed("      public init(", [f"{camel(n)}: {swift_type(t)}" for n, t in columns], ") {", 6)
    out += [f"        self.{camel(n)} = {camel(n)}" for n, _ in columns]
    out.append("      }")
    out.append("")
    out.append("      public init(_ row: ResultRow) throws(PostgresError) {")
    out += [f"        {camel(n)} = try row.decode({swift_string(n)})" for n, _ in columns]
    out.append("      }")
    out.append("    }")
    return out


def render(statements, target):
    sql_dir = target.sql_dir.relative_to(ROOT)
    access = target.access
    out = [
        f"// Generated by scripts/gen-sql.py from {sql_dir}/*.sql: do not edit. Edit the .sql file",
        "// and run `make sql` (or scripts/gen-sql.py); SQLFilesTests fail while this file is stale.",
        "",
    ]
    if target.imports:
        out += [f"import {module}" for module in target.imports] + [""]
    out += [
        f"/// {target.about}, one per {sql_dir}/<name>.sql file:",
        "/// its text (the file's `@name` parameters sent as `$1`, `$2`, ... in the header's order), what it",
        "/// takes (`Parameters`, by name) and what it returns (`Row`, read by name).",
        f"{access}enum {target.enum} {{",
    ]
    for index, statement in enumerate(statements):
        if index:
            out.append("")
        for line in statement.description:
            out.append(f"  /// {line}".rstrip())
        out.append(f"  {access}enum {statement.swift_name}: TypedStatement {{")
        out.append(f"    {access}static let statement = SQLStatement(")
        out.append(f"      name: {swift_string(statement.name)},")
        out.append('      text: #"""')
        out.extend(f"        {line}" if line else "" for line in statement.text.split("\n"))
        out.append('        """#,')
        arrays = [
            ("parameters", [swift_string(n) for n, _ in statement.parameters]),
            ("parameterTypes", [swift_string(t.replace("?", "")) for _, t in statement.parameters]),
            ("columns", [swift_string(n) for n, _ in statement.columns]),
            ("columnTypes", [swift_string(t.replace("?", "")) for _, t in statement.columns]),
        ]
        for position, (label, items) in enumerate(arrays):
            out.extend(packed(f"      {label}: [", items, "],", 6, trailing_comma=True))
        out.append(f"      deadline: .{statement.deadline})")
        out.append("")
        out.extend(line.replace("public ", access) for line in render_parameters(statement))
        out.append("")
        out.extend(line.replace("public ", access) for line in render_row(statement))
        out.append("  }")
    out.append("")
    out.append("  /// All of them, in file name order.")
    out.extend(packed(f"  {access}static let all: [SQLStatement] = [",
                      [f"{s.swift_name}.statement" for s in statements], "]", 2, trailing_comma=True))
    out.append("}")
    return "\n".join(out) + "\n"


def generate(target, check):
    """Writes (or with `check` compares) one target's Swift; the exit status."""
    files = sorted(p for p in target.sql_dir.glob("*.sql") if p.name != SNAPSHOT)
    try:
        statements = [parse(p, target.default_deadline) for p in files]
    except SQLFileError as error:
        print(f"gen-sql: {error}", file=sys.stderr)
        return 2
    if not statements:
        print(f"gen-sql: no .sql files in {target.sql_dir}", file=sys.stderr)
        return 2
    generated = render(statements, target)
    relative = target.output.relative_to(ROOT)
    if check:
        current = target.output.read_text(encoding="utf-8") if target.output.exists() else None
        if current != generated:
            print(f"gen-sql: {relative} is stale: run scripts/gen-sql.py (or make sql) and commit it",
                  file=sys.stderr)
            return 1
        return 0
    target.output.parent.mkdir(parents=True, exist_ok=True)
    if not target.output.exists() or target.output.read_text(encoding="utf-8") != generated:
        target.output.write_text(generated, encoding="utf-8")
        print(f"gen-sql: wrote {relative} ({len(statements)} statements)")
    return 0


def main():
    parser = argparse.ArgumentParser(description="Generate the Swift of every SQL folder (TARGETS).")
    parser.add_argument("--check", action="store_true", help="exit 1 if a generated file is stale")
    args = parser.parse_args()
    return max(generate(target, args.check) for target in TARGETS)


if __name__ == "__main__":
    sys.exit(main())
