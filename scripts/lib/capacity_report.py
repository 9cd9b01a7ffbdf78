#!/usr/bin/env python3
"""Reports the readings of scripts/capacity.sh: one directory per step (closed, held, bench).

    python3 scripts/lib/capacity_report.py DIR [DIR...]

Each figure per fix is divided by the fixes the load sent; per webhook by the webhooks
received. The readings are taken just before and just after the load (scripts/load.sh's
CHECKIN_LOAD_HOOK), while the pipeline runs.
"""
import json
import os
import re
import sys

CONTROL = re.compile(r"^\s*(BEGIN|COMMIT|ROLLBACK|START|SAVEPOINT|RELEASE|SET|SHOW|DISCARD|DEALLOCATE)\b", re.I)
# Statements by the work they do, the first pattern a statement's text matches.
GROUPS = [
    ("endpoint removal (the load's end)", r"^\s*(DELETE FROM webhook_endpoints|DELETE FROM event_payloads b USING|SELECT b\.event_id FROM event_payloads b JOIN|SELECT d\.event_id FROM deliveries d WHERE d\.endpoint_id = \$1 AND EXISTS)"),
    ("deliveries (notifier)", r"deliveries|event_payloads|notifier_leases|webhook_endpoints"),
    ("events: outbox and log (evaluator)", r"event_outbox|event_log"),
    ("decision records (evaluator)", r"decision_records"),
    ("states, offsets, epochs (evaluator)", r"device_states|consumer_offsets|partition_epochs|erasures|pg_advisory"),
]


def load(path):
    with open(path) as f:
        return json.load(f)


def sockets(path):
    """bytes_received and bytes_sent of each socket, by its peer."""
    found = {}
    lines = open(path).read().splitlines() if os.path.exists(path) else []
    peer = None
    for line in lines:
        if not line.startswith((" ", "\t")):
            fields = line.split()
            # Recv-Q Send-Q Local Peer (state filtered away)
            peer = fields[3] if len(fields) >= 4 else line
            found.setdefault(peer, {"received": 0, "sent": 0})
        else:
            for key, name in (("bytes_received", "received"), ("bytes_sent", "sent")):
                m = re.search(key + r":(\d+)", line)
                if m and peer is not None:
                    found[peer][name] = int(m.group(1))
            if "bytes_sent" not in line and peer is not None:
                m = re.search(r"bytes_acked:(\d+)", line)
                if m:
                    found[peer]["sent"] = int(m.group(1))
    return found


def memory_kb(path, key="VmRSS"):
    if not os.path.exists(path):
        return None
    for line in open(path):
        if line.startswith(key):
            return int(line.split()[1])
    return None


def n(value, digits=0):
    return f"{value:,.{digits}f}"


def report_load(work, step):
    out = []
    result = load(os.path.join(work, "load.json"))
    fixes = result["fixes"]
    hooks = result.get("webhooks", {}).get("received") or result.get("expectedWebhooks") or 0
    per_webhook = fixes / hooks if hooks else float("nan")
    settings = open(os.path.join(work, "settings.txt")).read().split() if os.path.exists(os.path.join(work, "settings.txt")) else []
    out.append(f"== {step}: {fixes:,} fixes of {result['devices']:,} devices, {hooks:,} webhooks "
               f"({hooks / fixes:.3f} per fix); Postgres {' '.join(settings)}")
    last = result.get("webhooks", {}).get("secondsToLastWebhook")
    if last:
        out.append(f"through to webhooks: the last {last:.2f} s after the first fix: "
                   f"{fixes / last:,.0f} fixes/s, {hooks / last:,.0f} webhooks/s; "
                   f"evaluated at {result.get('endToEndFixesPerSecond', 0):,.0f} fixes/s")
    if result.get("drainDeliveriesPerSecond"):
        d = result["drain"]
        out.append(f"held drain: {d['deliveries']:,} deliveries to {d['endpoints']} endpoint(s) in "
                   f"{result['drainSeconds']:.2f} s from the enabling: {result['drainDeliveriesPerSecond']:,.0f} deliveries/s "
                   f"(all queued {d['queuedSeconds']:.2f} s after the first fix: {fixes / d['queuedSeconds']:,.0f} fixes/s "
                   f"evaluated and queued; {d['receivedBeforeRelease']} received while held)")
    w = result.get("webhooks", {})
    out.append(f"webhooks: {w.get('received', 0):,} received, {w.get('duplicates', 0)} duplicates, "
               f"{w.get('badSignatures', 0)} bad signatures")
    cpu = result.get("cpu")
    if cpu:
        wall = cpu["wallSeconds"]
        out.append(f"CPU over {wall:.2f} s of load (µs per fix | per webhook | cores):")
        named = {k: v for k, v in cpu["seconds"].items()}
        for name in ("checkin", "postgres", "broker", "load", "other"):
            if name in cpu["microsecondsPerFix"]:
                us = cpu["microsecondsPerFix"][name]
                out.append(f"  {name:9} {us:8.1f} | {us * per_webhook:9.1f} | {named[name] / wall:5.2f}")
        out.append(f"  {'machine':9} {cpu['machineMicrosecondsPerFix']:8.1f} | {cpu['machineMicrosecondsPerWebhook']:9.1f} | "
                   f"{cpu['machineSeconds'] / wall:5.2f}  (steal {cpu.get('stealSeconds', 0):.2f} s)")
        pipeline = sum(named.get(k, 0) for k in ("checkin", "postgres", "broker"))
        if pipeline:
            out.append(f"  Postgres's share of the pipeline's CPU (checkin + postgres + broker): "
                       f"{100 * named.get('postgres', 0) / pipeline:.0f} %")
    before = load(os.path.join(work, "before.postgres.json"))
    after = load(os.path.join(work, "after.postgres.json"))
    wal = after["walBytesFromZero"] - before["walBytesFromZero"]
    out.append(f"WAL: {n(wal / 1e6, 1)} MB, {wal / fixes:,.0f} bytes per fix, {wal / hooks:,.0f} per webhook"
               + (f"; {n((after['wal']['wal_fpi'] - before['wal']['wal_fpi']))} full-page images" if after.get("wal") else ""))
    db = {k: after["database"][k] - before["database"][k] for k in after["database"]}
    out.append(f"transactions: {db['commits']:,} commits ({db['commits'] / fixes:.4f} per fix), {db['rollbacks']:,} rollbacks; "
               f"rows inserted {db['inserted'] / fixes:.2f}, updated {db['updated'] / fixes:.2f}, "
               f"deleted {db['deleted'] / fixes:.2f} per fix")
    statements_path = os.path.join(work, "statements.json")
    if os.path.exists(statements_path):
        rows = load(statements_path)
        work_rows = [r for r in rows if not CONTROL.match(r["query"])]
        calls = sum(r["calls"] for r in rows)
        wcalls = sum(r["calls"] for r in work_rows)
        wrows = sum(r["rows"] for r in work_rows)
        exec_ms = sum(r["execMs"] + r["planMs"] for r in rows)
        out.append(f"statements (pg_stat_statements, role checkin): {calls:,} ({calls / fixes:.4f} per fix, "
                   f"{calls / hooks:.3f} per webhook), {wcalls:,} without transaction control "
                   f"({wcalls / fixes:.4f} per fix, {wcalls / hooks:.3f} per webhook); rows {wrows:,} "
                   f"({wrows / fixes:.2f} per fix, {wrows / hooks:.2f} per webhook); "
                   f"{exec_ms / 1000:.1f} s planning and executing")
        out.append("by the work they do (per fix: calls per 1,000, rows, WAL bytes, ms per 1,000; "
                   "per webhook: rows, WAL bytes):")
        groups = {}
        for r in work_rows:
            text = " ".join(r["query"].split())
            group = next((g for g, pattern in GROUPS if re.search(pattern, text)), "other")
            total = groups.setdefault(group, {"calls": 0, "rows": 0, "walBytes": 0, "ms": 0.0})
            total["calls"] += r["calls"]
            total["rows"] += r["rows"]
            total["walBytes"] += r["walBytes"] or 0
            total["ms"] += r["execMs"] + r["planMs"]
        for group, _ in GROUPS + [("other", None)]:
            if group in groups:
                t = groups[group]
                out.append(f"  {group:36} {1000 * t['calls'] / fixes:6.2f} {t['rows'] / fixes:6.3f} {t['walBytes'] / fixes:7.1f} "
                           f"{1000 * t['ms'] / fixes:6.1f} | {t['rows'] / hooks:7.2f} {t['walBytes'] / hooks:8.1f}")
        out.append("top statements by time (calls per 1,000 fixes | rows per fix | ms | WAL bytes per fix | query):")
        for r in sorted(rows, key=lambda r: -(r["execMs"] + r["planMs"]))[:14]:
            query = " ".join(r["query"].split())[:110]
            out.append(f"  {1000 * r['calls'] / fixes:8.2f} | {r['rows'] / fixes:6.3f} | {r['execMs'] + r['planMs']:8.0f} | "
                       f"{(r['walBytes'] or 0) / fixes:6.1f} | {query}")
    out.append("tables written (per fix: inserted, updated (in place), deleted; size growth):")
    for name in sorted(after.get("tables") or {}):
        a = after["tables"][name]
        b = (before.get("tables") or {}).get(name, {"inserted": 0, "updated": 0, "hotUpdated": 0, "deleted": 0, "bytes": 0})
        d = {k: a[k] - b[k] for k in a}
        if d["inserted"] or d["updated"] or d["deleted"]:
            out.append(f"  {name:28} {d['inserted'] / fixes:7.4f} {d['updated'] / fixes:7.4f} ({d['hotUpdated'] / fixes:.4f}) "
                       f"{d['deleted'] / fixes:7.4f}  {d['bytes'] / 1e6:+8.1f} MB")
    s0 = sockets(os.path.join(work, "before.broker-sockets.txt"))
    s1 = sockets(os.path.join(work, "after.broker-sockets.txt"))
    received = sum(v["received"] - s0.get(k, {}).get("received", 0) for k, v in s1.items())
    sent = sum(v["sent"] - s0.get(k, {}).get("sent", 0) for k, v in s1.items())
    gone = len(set(s0) - set(s1))
    out.append(f"broker over TCP: {received / fixes:,.0f} bytes in and {sent / fixes:,.0f} out per fix "
               f"({received / hooks:,.0f} and {sent / hooks:,.0f} per webhook; {received / 1e6:,.1f} and {sent / 1e6:,.1f} MB; "
               f"{len(s1)} connections, {gone} closed meanwhile)")
    m0 = memory_kb(os.path.join(work, "before.broker-memory.txt"))
    m1 = memory_kb(os.path.join(work, "after.broker-memory.txt"))
    if m0 is not None and m1 is not None:
        out.append(f"broker's resident memory (topics in memory): {m0 / 1024:,.0f} → {m1 / 1024:,.0f} MiB, "
                   f"{(m1 - m0) * 1024 / fixes:,.0f} bytes per fix")
    return out


def report_bench(work):
    result = load(os.path.join(work, "bench.json"))
    w, c = result["window"], result["conditions"]
    return [f"== bench: one evaluator, {result['fixes']:,} fixes of {result['devices']:,} devices, {result['fences']:,} fences; "
            f"fsync={c['fsync']} synchronous_commit={c['synchronousCommit']} full_page_writes={c['fullPageWrites']}",
            f"steady state: {w['fixesPerSecond']:,.0f} fixes/s, {w['eventsPerSecond']:,.0f} events/s, "
            f"{w['walBytesPerFix']:.0f} WAL bytes per fix, batches p50 <= {w['batchP50AtMostMilliseconds']:.0f} ms"]


def main():
    for work in sys.argv[1:]:
        if not os.path.isdir(work):
            continue
        step = open(os.path.join(work, "step")).read().strip() if os.path.exists(os.path.join(work, "step")) else "?"
        try:
            lines = report_bench(work) if step == "bench" else report_load(work, step)
        except (OSError, KeyError, ValueError) as error:
            lines = [f"== {step}: no figures ({error})"]
        print("\n".join(lines))
        print()


if __name__ == "__main__":
    main()
