#!/usr/bin/env python3
"""Builds the equal-work pgbench replay of one bench/records.sh workload (run by bench/equalwork.sh).

  equalwork.py STATEMENTS LOG OUTDIR WORKLOAD NAMEPREFIX ZONE_IDS CAPTURE_RECORDS

STATEMENTS: pg_stat_statements rows of Nimbus's database during the capture run (queryid, calls,
rows, mean ms, text; tab-separated). LOG: the PostgreSQL log of that run, with log_line_prefix
'%m [%p] q=%Q ' and a random sample of executed statements with their parameters
(log_min_duration_sample = 0, log_statement_sample_rate). NAMEPREFIX: the record-name prefix the
capture run's client used. ZONE_IDS: the ids of the workload's zones (comma-separated).
CAPTURE_RECORDS: records Nimbus wrote or delivered in the capture run.

Writes OUTDIR/WORKLOAD-K.sql (one pgbench script per replayed statement), OUTDIR/WORKLOAD.args
(pgbench arguments: -f SCRIPT@WEIGHT and -D NAME=VALUE, one per line), OUTDIR/WORKLOAD.records
(records per transaction of each script, for the rate) and OUTDIR/WORKLOAD.notes (what was
replayed and how). Exit status 2 when nothing can be replayed.

How the parameters are made (the statement text itself is Nimbus's, verbatim from the log):
  * every statement Nimbus ran with at least 1% of the calls is replayed, each as its own pgbench
    transaction (Nimbus runs them outside explicit transactions), weighted by its calls, so the
    mix of statements and commits per record is Nimbus's;
  * for each statement, one logged execution is the model: for statements carrying records, the
    one whose record count is closest to the mean over the logged executions (that is, the mean
    batch size of the combined statement); parameters are that execution's values, passed as
    pgbench variables (-D, -M prepared: bound parameters, as Nimbus binds them), cast to bigint /
    bytea / boolean / text by the value's shape;
  * record names (a text array whose elements start with NAMEPREFIX) are generated in the
    statement: 'e' || :client_id || '-' || :rn || '-' || g for g in 1..N, with
    \\set rn random(1, 10^12) per transaction (unique, like Nimbus's, ~19 characters);
  * zone ids (a parameter whose values over the logged executions are all ids of the workload's
    zones and not always the same) are drawn at random per transaction among the workload's zones
    (\\set, or for an array of request zones a random pick per element in SQL);
  * other integer scalars that vary over the logged executions (timestamps, the sync position of
    records/changes) are drawn uniformly between their logged minimum and maximum; parameters equal
    to each other in every logged execution share one variable (e.g. a zone id used twice);
  * an array parameter longer than 60 kB as text (the fields of a combined statement of several
    100-record requests: pgbench variables must fit in one argument) is built in the statement by
    array_fill of its first element: the records carry the same ~300-byte fields JSON, not 1000
    different ones, and PostgreSQL fills the array instead of parsing its text.
"""
import os
import re
import sys
from collections import defaultdict

MAX_ARG = 60_000

def parse_log(path):
    head = re.compile(r'^\d{4}-\d\d-\d\d [\d:.]+ \S+ \[(\d+)\] q=(-?\d+) ([A-Z]+):  (.*)$')
    msgs = []
    with open(path, encoding='utf-8', errors='replace') as f:
        for line in f:
            line = line.rstrip('\n')
            m = head.match(line)
            if m:
                msgs.append([m.group(1), m.group(2), m.group(3), m.group(4)])
            elif msgs:
                msgs[-1][3] += '\n' + line
    samples = defaultdict(list)  # queryid -> [(sql, params)]
    pending = {}
    execute = re.compile(r'^duration: [\d.]+ ms  (execute [^:]*|statement): (.*)$', re.S)
    for pid, qid, level, text in msgs:
        if level == 'LOG':
            m = execute.match(text)
            pending.pop(pid, None)
            if not m:
                continue
            if m.group(1) == 'statement':
                samples[qid].append((m.group(2), {}))
            else:
                pending[pid] = (qid, m.group(2))
        elif level == 'DETAIL' and pid in pending and text.startswith('parameters: '):
            qid, sql = pending.pop(pid)
            samples[qid].append((sql, parse_params(text[len('parameters: '):])))
    return samples

def parse_params(s):
    out = {}
    pat = re.compile(r"\$(\d+) = (NULL|'((?:[^']|'')*)')(?:, |$)", re.S)
    pos = 0
    while pos < len(s):
        m = pat.match(s, pos)
        if not m:
            break
        out[int(m.group(1))] = None if m.group(2) == 'NULL' else m.group(3).replace("''", "'")
        pos = m.end()
    return out

def array_elems(v):
    """Elements of a one-dimensional array literal, or None when v is not one."""
    if v is None or not (v.startswith('{') and v.endswith('}')):
        return None
    body = v[1:-1]
    if body == '':
        return []
    elems, cur, i, quoted, was_quoted = [], [], 0, False, False
    while i < len(body):
        c = body[i]
        if quoted:
            if c == '\\':
                i += 1; cur.append(body[i])
            elif c == '"':
                quoted = False
            else:
                cur.append(c)
        elif c == '"':
            quoted = True; was_quoted = True
        elif c == ',':
            elems.append(''.join(cur)); cur = []; was_quoted = False
        elif c == '{':
            return None  # nested: not handled
        else:
            cur.append(c)
        i += 1
    elems.append(''.join(cur))
    return elems

INT = re.compile(r'^-?\d+$')

def elem_type(vals):
    vals = [v for v in vals if v is not None and v != 'NULL']
    if vals and all(INT.match(v) for v in vals):
        return 'bigint'
    if vals and all(v.startswith('\\x') for v in vals):
        return 'bytea'
    return 'text'

def scalar_type(v):
    if v is None:
        return None
    if INT.match(v):
        return 'bigint'
    if v.startswith('\\x'):
        return 'bytea'
    if v in ('t', 'f'):
        return 'boolean'
    return 'text'

def main():
    stmts_path, log_path, outdir, workload, prefix, zone_ids, capture_records = sys.argv[1:8]
    zones = [int(z) for z in zone_ids.split(',') if z]
    zone_set = set(zones)
    capture_records = float(capture_records or 0)
    rows = []
    with open(stmts_path) as f:
        for line in f:
            parts = line.rstrip('\n').split('\t')
            if len(parts) >= 5:
                rows.append((parts[0], int(parts[1]), int(parts[2]), float(parts[3]), parts[4]))
    samples = parse_log(log_path)
    total_calls = sum(r[1] for r in rows) or 1
    notes = [f'{workload}: {len(rows)} statements, {total_calls} calls in the capture run; {capture_records:.0f} records']
    kept = []
    for qid, calls, nrows, mean_ms, text in rows:
        short = text[:90]
        if re.match(r'^\s*(BEGIN|COMMIT|ROLLBACK|START|END)\b', text, re.I):
            notes.append(f'  NOT REPLAYED (explicit transaction control: each statement replays as its own transaction): {calls} x {short}')
            continue
        if calls < 0.01 * total_calls:
            notes.append(f'  omitted (< 1% of the calls): {calls} x {short}')
            continue
        if not samples.get(qid):
            notes.append(f'  NOT REPLAYED (no logged execution to take parameters from): {calls} x {short}')
            continue
        kept.append((qid, calls, nrows, mean_ms, text))
    if not kept:
        notes.append('  nothing to replay')
        open(os.path.join(outdir, workload + '.notes'), 'w').write('\n'.join(notes) + '\n')
        sys.exit(2)

    args, files, recs = [], [], []
    name_calls = 0
    for k, (qid, calls, nrows, mean_ms, text) in enumerate(kept, 1):
        short = text[:90]
        smp = samples[qid]
        sql = smp[0][0]
        nparams = max((max(p) if p else 0) for _, p in smp)
        # parameter roles over all logged executions of the statement
        names_param = None
        for n in range(1, nparams + 1):
            el = [array_elems(p.get(n)) for _, p in smp]
            if all(e is not None and len(e) > 0 and all(x.startswith(prefix) for x in e) for e in el):
                names_param = n
                break
        if names_param:
            lens = [len(array_elems(p[names_param])) for _, p in smp]
            mean_len = sum(lens) / len(lens)
            model = min(range(len(smp)), key=lambda i: abs(lens[i] - mean_len))
            per_tx = lens[model]
            name_calls += calls
        else:
            mean_len, model, per_tx = None, len(smp) // 2, 0
        params = smp[model][1]
        pre = f's{k}_'
        lines = [f'-- Equal-work replay, workload {workload}, statement {k} of {len(kept)}: Nimbus ran it {calls} times',
                 f'-- in the capture run (pg_stat_statements queryid {qid}, {nrows} rows, mean {mean_ms} ms);',
                 f'-- {len(smp)} logged executions; parameters from execution {model + 1} (see bench/equalwork.py).']
        sets = []
        exprs = {}
        done = set()
        if len(zone_set) > 1:
            for n in range(1, nparams + 1):
                vals = [p.get(n) for _, p in smp]
                els = [array_elems(v) for v in vals]
                if all(e is not None for e in els):
                    flat = [x for e in els for x in e]
                    if flat and all(INT.match(x) and int(x) in zone_set for x in flat) and len(set(flat)) > 1:
                        cnt = len(array_elems(params[n]))
                        exprs[n] = (f'(SELECT array_agg((:{pre}zones::bigint[])[1 + floor(random() * {len(zones)})::int]) '
                                    f'FROM generate_series(1, {cnt}))')
                        args.append(f'-D{pre}zones={{{",".join(map(str, zones))}}}')
                        lines.append(f'-- ${n}: the requests\' zones, each drawn at random among the workload\'s {len(zones)} zones')
                        done.add(n)
                elif all(v is not None and INT.match(v) and int(v) in zone_set for v in vals) and len(set(vals)) > 1:
                    if 'zidx' not in ''.join(sets):
                        sets.append(f'\\set {pre}zidx random(1, {len(zones)})')
                        args.append(f'-D{pre}zones={{{",".join(map(str, zones))}}}')
                    exprs[n] = f'(:{pre}zones::bigint[])[:{pre}zidx]'
                    lines.append(f'-- ${n}: the zone id, drawn at random among the workload\'s {len(zones)} zones')
                    done.add(n)
        if names_param:
            cnt = len(array_elems(params[names_param]))
            sets.append(f'\\set {pre}rn random(1, 1000000000000)')
            exprs[names_param] = (f"(SELECT array_agg('e' || :client_id || '-' || :{pre}rn || '-' || g ORDER BY g) "
                                  f'FROM generate_series(1, {cnt}) g)')
            lines.append(f'-- ${names_param}: {cnt} unique record names (mean over the logged executions {mean_len:.1f})')
            done.add(names_param)
        # varying integer scalars: uniform between their logged min and max; equal ones share a variable
        groups = {}
        for n in range(1, nparams + 1):
            if n in done:
                continue
            vals = [p.get(n) for _, p in smp]
            if all(v is not None and INT.match(v) for v in vals) and len(set(vals)) > 1:
                # a count of records or requests (the length of an array parameter, or the sum of its
                # elements, in every logged execution): the model execution's value, as its arrays are
                sizes = None
                for m in range(1, nparams + 1):
                    def size(p, m=m):
                        e = array_elems(p.get(m))
                        if e is None:
                            return set()
                        out = {len(e)}
                        if e and all(INT.match(x) for x in e):
                            out.add(sum(int(x) for x in e))
                        return out
                    if all(int(p.get(n)) in size(p) for _, p in smp):
                        sizes = m; break
                if sizes:
                    v = params.get(n)
                    args.append(f'-D{pre}p{n}={v}')
                    exprs[n] = f':{pre}p{n}::bigint'
                    lines.append(f'-- ${n}: a count (the size of ${sizes} in every logged execution): {v}, as in the model execution')
                    done.add(n)
                    continue
                key = None
                for g, members in groups.items():
                    if all(p.get(g) == p.get(n) for _, p in smp):
                        key = g; break
                if key is None:
                    groups[n] = [n]
                    lo, hi = min(map(int, vals)), max(map(int, vals))
                    sets.append(f'\\set {pre}v{n} random({lo}, {hi})')
                    lines.append(f'-- ${n}: varies in the logged executions: uniform in [{lo}, {hi}]')
                    exprs[n] = f':{pre}v{n}::bigint'
                else:
                    groups[key].append(n)
                    exprs[n] = f':{pre}v{key}::bigint'
                    lines.append(f'-- ${n}: always equal to ${key}')
                done.add(n)
        # everything else: the model execution's value
        for n in range(1, nparams + 1):
            if n in done:
                continue
            v = params.get(n)
            if v is None:
                exprs[n] = 'NULL'
                continue
            el = array_elems(v)
            if el is not None:
                t = elem_type(el)
                if len(v) > MAX_ARG:
                    args.append(f'-D{pre}p{n}={el[0]}')
                    exprs[n] = f'array_fill(:{pre}p{n}::{t}, ARRAY[{len(el)}])'
                    lines.append(f'-- ${n}: {len(el)} copies of the logged array\'s first element ({len(v)} bytes as text: too long for a pgbench variable)')
                else:
                    args.append(f'-D{pre}p{n}={v}')
                    exprs[n] = f':{pre}p{n}::{t}[]'
            else:
                args.append(f'-D{pre}p{n}={v}')
                exprs[n] = f':{pre}p{n}::{scalar_type(v)}'
        body = re.sub(r'\$(\d+)\b', lambda m: exprs.get(int(m.group(1)), m.group(0)), sql).rstrip().rstrip(';')
        path = os.path.join(outdir, f'{workload}-{k}.sql')
        with open(path, 'w') as f:
            f.write('\n'.join(lines + sets) + '\n' + body + ';\n')
        files.append(f'-f{path}@{calls}')
        recs.append([k, calls, per_tx])
        notes.append(f'  replayed: {calls} x ({per_tx} records/tx) {short}')
    # reads: the records Nimbus delivered, per call of its most frequent record-less statement
    if name_calls == 0 and capture_records > 0:
        main = max(recs, key=lambda r: r[1])
        main[2] = capture_records / main[1]
        notes.append(f'  records per call of the read statement: {main[2]:.1f} (Nimbus: {capture_records:.0f} records / {main[1]} calls)')
    with open(os.path.join(outdir, workload + '.args'), 'w') as f:
        f.write('\n'.join(files + args) + '\n')
    with open(os.path.join(outdir, workload + '.records'), 'w') as f:
        for k, calls, per_tx in recs:
            f.write(f'{k} {calls} {per_tx}\n')
    with open(os.path.join(outdir, workload + '.notes'), 'w') as f:
        f.write('\n'.join(notes) + '\n')

if __name__ == '__main__':
    main()
