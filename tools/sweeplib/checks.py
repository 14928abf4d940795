"""The checks: which error codes are permanent, transient or image errors; the variants checked with
djpeg; percentiles; the findings kept in --findings; and report, which reads the jobs back, prints each
check with its figure, the files and outcomes by format and mutator, and writes --out-json."""

import concurrent.futures
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time

from .common import FAMILIES, log
from .run import describe_exit

PERMANENT = {"not_found", "http_error", "too_large", "blocked_source", "unsupported_format", "corrupt_image",
             "over_memory_budget", "invalid_profile"}
IMAGE_ERRORS = {"corrupt_image", "unsupported_format", "too_large", "over_memory_budget"}
TRANSIENT = {"fetch_failed", "timeout", "storage_failed", "storage_refused", "lease_expired", "internal_error"}
VARIANTS = {"large": 1600, "medium": 800, "small": 320, "square": 256}  # the default profile's boxes
LOG_ALARM = re.compile(r"fatal|crash", re.I)


def percentile(values, p):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, max(0, int(round(p / 100 * len(values) + 0.5)) - 1))]


def check_variants(storage, variants, jobs_succeeded, workers):
    """Each succeeded job has its 4 rows; each row's file exists, hashes to its key and decodes with djpeg at
    its row's size. Returns (problems, objects checked)."""
    problems = []
    by_job = {}
    for v in variants:
        by_job.setdefault(v["job_id"], []).append(v)
    for job in jobs_succeeded:
        names = sorted(v["name"] for v in by_job.get(job, []))
        if names != sorted(VARIANTS):
            problems.append(f"job {job}: variant rows {names}")
    for job, rows in by_job.items():
        if job not in jobs_succeeded:
            problems.append(f"job {job}: {len(rows)} variant rows but not succeeded")
    objects = {}
    for v in variants:
        objects[v["storage_key"]] = v

    def one(v):
        path = os.path.join(storage, v["storage_key"])
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            return f"{v['storage_key']}: missing"
        if len(data) != v["bytes"] or hashlib.sha256(data).hexdigest() != os.path.basename(v["storage_key"]).split(".")[0]:
            return f"{v['storage_key']}: bytes or hash differ"
        if v["format"] != "jpeg":
            return f"{v['storage_key']}: format {v['format']}"
        if v["width"] > VARIANTS[v["name"]] or v["height"] > VARIANTS[v["name"]]:
            return f"{v['storage_key']}: {v['width']}x{v['height']} over the {v['name']} box"
        decoded = subprocess.run(["djpeg", "-pnm", path], capture_output=True)
        header = decoded.stdout[:32].split()
        if decoded.returncode != 0 or len(header) < 3 or (int(header[1]), int(header[2])) != (v["width"], v["height"]):
            return f"{v['storage_key']}: does not decode at {v['width']}x{v['height']} (djpeg exit {decoded.returncode})"
        return None

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        problems += [p for p in pool.map(one, objects.values()) if p]
    return problems, len(objects)


def save_finding(args, kind, record, source_folder, detail):
    """The file of a finding, with what made it and how to reproduce it, in --findings."""
    os.makedirs(args.findings, exist_ok=True)
    name = record["file"]
    target = os.path.join(args.findings, name)
    shutil.copyfile(os.path.join(source_folder, name), target)
    repro = f"{args.thumbd} thumbnail --out /tmp/x {target}"
    try:
        result = subprocess.run([args.thumbd, "thumbnail", "--out", tempfile.mkdtemp(prefix="sweep-repro-"), target],
                                capture_output=True, text=True, timeout=max(30, args.job_timeout))
        reproduced = f"{describe_exit(result.returncode)}: {(result.stderr or result.stdout).strip()[-600:]}"
    except subprocess.TimeoutExpired:
        reproduced = f"thumbd thumbnail did not finish in {max(30, args.job_timeout)} s"
    entry = dict(record, finding=kind, detail=detail, reproduce=repro, thumbnail_result=reproduced)
    with open(target + ".json", "w") as out:
        json.dump(entry, out, indent=2)
    return entry


def report(args, seeds, skipped, records, invalid, everything, database, sweep, storage, served, started, run_seconds):
    """The results: each job's outcome and the variants read back from the database, each check printed
    with its figure, the files and outcomes by format, kind and mutator, the job times, the invalid/ files,
    the findings kept; --out-json written. Returns the exit code."""
    jobs = database.json(
        "SELECT json_agg(json_build_object('id', id, 'state', state, 'error_code', error_code, "
        "'last_error', left(last_error, 400), 'attempts', attempts, "
        "'ms', round(extract(epoch FROM finished_at - started_at) * 1000), 'attempt_log', attempt_log)) "
        "FROM thumbs.jobs") or []
    variants = database.json(
        "SELECT json_agg(json_build_object('job_id', job_id, 'name', name, 'width', width, 'height', height, "
        "'format', format, 'bytes', bytes, 'storage_key', storage_key)) FROM thumbs.variants") or []
    by_id = {j["id"]: j for j in jobs}
    for r in everything:
        j = by_id[r["job"]]
        r.update(state=j["state"], error_code=j["error_code"], last_error=j["last_error"], attempts=j["attempts"],
                 ms=j["ms"], earlier_codes=[a.get("error_code") for a in j["attempt_log"] if a.get("error_code")])
        if r["job"] in sweep.cancelled:
            r["state"] = f"cancelled ({sweep.cancelled[r['job']]})"

    results = {}

    def verdict(name, held, figure):
        results[name] = {"held": bool(held), "figure": figure}
        log(f"{'ok  ' if held else 'FAIL'} {name}: {figure}")

    def outcome(r):
        return "succeeded" if r["state"] == "succeeded" else (r["error_code"] or r["state"])

    def table(rows, key):
        out = {}
        for r in rows:
            out.setdefault(key(r), {})
            o = outcome(r)
            out[key(r)][o] = out[key(r)].get(o, 0) + 1
        return {k: dict(sorted(v.items())) for k, v in sorted(out.items())}

    by_format = {f: sum(1 for r in records if r["family"] == f) for f in FAMILIES if any(r["family"] == f for r in records)}
    by_kind = {}
    by_mutator = {}
    for r in records:
        by_kind[r["kind"]] = by_kind.get(r["kind"], 0) + 1
        by_mutator[r["mutator"]] = by_mutator.get(r["mutator"], 0) + 1
    outcomes = {}
    for r in records:
        outcomes[outcome(r)] = outcomes.get(outcome(r), 0) + 1
    log("files by format: " + ", ".join(f"{k} {v}" for k, v in by_format.items())
        + "; by kind: " + ", ".join(f"{k} {v}" for k, v in sorted(by_kind.items())))
    log("files by mutator: " + ", ".join(f"{k} {v}" for k, v in sorted(by_mutator.items())))
    log("outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())))
    for family, counts in table(records, lambda r: r["family"]).items():
        log(f"  {family}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))

    # Crashes: worker exits, and log lines.
    alarms = []
    for worker in sweep.workers:
        for line in worker.log_text().splitlines():
            if LOG_ALARM.search(line):
                alarms.append(f"worker {worker.n}: {line[:300]}")
    crashes = len(sweep.crashes) + len(alarms)
    verdict("no crashes", crashes == 0,
            f"{len(sweep.crashes)} worker crashes, {len(alarms)} fatal/crash log lines; "
            f"{len(sweep.workers)} worker processes, "
            + ", ".join(f"{describe_exit(w.exit)} {sum(1 for x in sweep.workers if describe_exit(x.exit) == describe_exit(w.exit))}"
                        for w in {describe_exit(w.exit): w for w in sweep.workers}.values()))

    left = [r for r in everything if r["state"] in ("queued", "running")]
    hangs = len(sweep.hangs) + len(left) + (1 if sweep.timed_out else 0)
    verdict("no hangs", hangs == 0,
            f"{len(sweep.hangs)} jobs or workers past their time, {len(left)} jobs left queued or running, "
            f"run timeout {'fired' if sweep.timed_out else 'not reached'}")

    terminal = sum(1 for r in everything if r["state"] in ("succeeded", "failed"))
    verdict("every job ended", terminal == len(everything),
            f"{terminal} of {len(everything)} succeeded or failed; {len(sweep.cancelled)} cancelled by the sweep")

    failed = [r for r in everything if r["state"] == "failed"]
    transient = [r for r in everything if (r["state"] == "failed" and r["error_code"] not in PERMANENT)
                 or any(c in TRANSIENT for c in r["earlier_codes"])]
    verdict("every failure permanent", not transient,
            f"{len(failed)} failed, {len(transient)} with a transient code now or in an earlier attempt"
            + (f" ({'; '.join(r['file'] + ': ' + str(r['error_code']) for r in transient[:5])})" if transient else ""))
    misclassified = [r for r in failed if r["error_code"] not in IMAGE_ERRORS and r not in transient]
    verdict("every failure an image error", not misclassified,
            f"{len(failed) - len(misclassified)} of {len(failed)} are corrupt_image, unsupported_format, "
            f"too_large or over_memory_budget"
            + (f" ({'; '.join(r['file'] + ': ' + str(r['error_code']) for r in misclassified[:5])})" if misclassified else ""))
    retried = [r for r in everything if (r["attempts"] or 0) > 1]

    succeeded = {r["job"] for r in everything if r["state"] == "succeeded"}
    problems, objects = check_variants(storage, variants, succeeded, args.workers)
    verdict("every succeeded job has 4 variants that decode at their size", not problems,
            f"{len(succeeded)} jobs, {len(variants)} rows, {objects} files checked with djpeg, {len(problems)} problems"
            + (f" ({'; '.join(problems[:5])})" if problems else ""))

    finished = [r for r in everything if r["ms"] is not None and r["state"] in ("succeeded", "failed")]
    durations = [r["ms"] for r in finished]
    longest = max(finished, key=lambda r: r["ms"]) if finished else None
    p99 = percentile(durations, 99)
    p50 = percentile(durations, 50)
    log(f"job time: p50 {p50} ms, p99 {p99} ms, longest {longest['ms'] if longest else None} ms"
        + (f" ({longest['file']}, {outcome(longest)})" if longest else ""))

    for r in invalid:
        log(f"invalid/{r['name']}: {outcome(r)}" + (f" ({r['last_error']})" if r["last_error"] else ""))

    # Findings: the files of crashes, hangs and transient failures.
    findings = []
    record_by_job = {r["job"]: r for r in everything}
    source = served
    for crash in sweep.crashes:
        for job in crash["jobs"]:
            findings.append(save_finding(args, "crash", record_by_job[job], source,
                                         {"exit": crash["exit"], "log_tail": crash["log_tail"]}))
    for hang in sweep.hangs:
        if hang.get("job") in record_by_job:
            findings.append(save_finding(args, "hang", record_by_job[hang["job"]], source, hang))
    for r in left:
        findings.append(save_finding(args, "left_" + r["state"], r, source, {}))
    for r in transient + misclassified:
        logged = [line for w in sweep.workers for line in w.log_text().splitlines() if f"job.id={r['job']} " in line]
        findings.append(save_finding(args, "transient" if r in transient else "misclassified", r, source,
                                     {"log": logged[-10:]}))
    for f in findings:
        log(f"FINDING {f['finding']}: {f['file']} ({f['mutator']} {json.dumps(f['params'])[:200]}); "
            f"kept as {os.path.join(args.findings, f['file'])}; thumbd thumbnail: {f['thumbnail_result'][:200]}")

    wall = time.time() - started
    summary = {
        "seed": args.seed, "mutations_asked": args.mutations, "workers": args.workers, "thumbd": args.thumbd,
        "shared_corpus": args.shared, "job_timeout_seconds": args.job_timeout, "run_timeout_seconds": args.timeout,
        "budget": args.budget, "max_pixels": args.max_pixels,
        "seeds": [{k: v for k, v in s.items() if k != "path"} for s in seeds],
        "formats_covered": list(by_format), "formats_skipped": [f for f in FAMILIES if f not in by_format],
        "skipped": skipped, "files": len(records), "invalid_files": len(invalid),
        "by_format": by_format, "by_kind": dict(sorted(by_kind.items())), "by_mutator": dict(sorted(by_mutator.items())),
        "outcomes": dict(sorted(outcomes.items())),
        "outcomes_by_format": table(records, lambda r: r["family"]),
        "outcomes_by_kind": table(records, lambda r: r["kind"]),
        "outcomes_by_mutator": table(records, lambda r: r["mutator"]),
        "crashes": crashes, "crash_details": sweep.crashes, "crash_log_lines": alarms[:50],
        "hangs": hangs, "hang_details": sweep.hangs + [{"job": r["job"], "what": "left " + r["state"]} for r in left],
        "run_timed_out": sweep.timed_out,
        "transient_failures": len(transient), "misclassified_failures": len(misclassified),
        "retried_jobs": len(retried), "succeeded": len(succeeded), "failed": len(failed),
        "variant_rows": len(variants), "objects_checked": objects, "variant_problems": problems[:100],
        "worker_processes": len(sweep.workers), "worker_exits": [describe_exit(w.exit) for w in sweep.workers],
        "p50_job_ms": p50, "p99_job_ms": p99, "longest_job_ms": longest["ms"] if longest else None,
        "longest_job": {k: longest[k] for k in ("file", "mutator", "params", "state", "error_code")} if longest else None,
        "run_seconds": round(run_seconds, 1), "wall_seconds": round(wall, 1),
        "invalid_corpus": [{"name": r["name"], "outcome": outcome(r), "last_error": r["last_error"]} for r in invalid],
        "findings": [{k: f[k] for k in ("finding", "file", "mutator", "params", "state", "error_code",
                                        "thumbnail_result", "reproduce")} for f in findings],
        "checks": results,
        "records": everything,
    }
    with open(args.out_json, "w") as out:
        json.dump(summary, out, indent=1)
    ok = crashes == 0 and hangs == 0 and not transient
    log(f"{len(records)} mutated files and {len(invalid)} invalid/ files in {wall:.0f} s "
        f"({run_seconds:.0f} s of workers): crashes {crashes}, hangs {hangs}, transient failures {len(transient)}; "
        + ("all held" if ok and all(r["held"] for r in results.values()) else
           "FAILED: " + ", ".join(n for n, r in results.items() if not r["held"])))
    return 0 if ok else 1
