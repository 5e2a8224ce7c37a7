#!/usr/bin/env bash
# The equal-work reference of bench/records.sh (sourced by it, not run): pgbench replaying the
# statements Nimbus itself ran, captured from pg_stat_statements and the PostgreSQL log during a
# short extra Nimbus run of each workload, against a copy of Nimbus's own database in the same cluster.
# Uses records.sh's globals and helpers (WORK, SOCK, PG_BIN, psql, say, die, nimbus_modify, ...).
# Run as a script (`bash bench/equalwork.sh [--smoke]`), it runs bench/records.sh with the same
# arguments: the equal-work reference is measured there, beside Nimbus (its smoke mode checks that
# every workload had its replay).
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  echo "[equalwork] the equal-work reference runs inside bench/records.sh; running it" >&2
  exec bash "$(dirname "$0")/records.sh" "$@"
fi

EQ_DB=nimbus_eq

# eq_capture_on / eq_capture_off: pg_stat_statements tracking of top-level statements, and a
# sample of the executed statements with their parameters in the PostgreSQL log.
eq_capture_on() {
  psql -d postgres -c "ALTER SYSTEM SET pg_stat_statements.track = 'top'" \
    -c "ALTER SYSTEM SET log_min_duration_sample = 0" -c "ALTER SYSTEM SET log_statement_sample_rate = ${EQ_LOG_SAMPLE:-0.1}" \
    -c "ALTER SYSTEM SET log_line_prefix = '%m [%p] q=%Q '" \
    -c "ALTER SYSTEM SET log_parameter_max_length = -1" -c 'SELECT pg_reload_conf()' >/dev/null
  sleep 0.5
  psql -d bench -c 'SET client_min_messages = warning' -c 'CREATE EXTENSION IF NOT EXISTS pg_stat_statements' -c 'SELECT pg_stat_statements_reset()' >/dev/null
  EQ_LOG_OFFSET=$(stat -c %s "$SOCK/postgres.log")
}
eq_capture_off() {
  psql -d postgres -c "ALTER SYSTEM RESET pg_stat_statements.track" -c "ALTER SYSTEM RESET log_min_duration_sample" -c "ALTER SYSTEM RESET log_line_prefix" \
    -c "ALTER SYSTEM RESET log_statement_sample_rate" -c "ALTER SYSTEM RESET log_parameter_max_length" \
    -c 'SELECT pg_reload_conf()' >/dev/null
  sleep 0.3
}
# eq_dump_statements OUT: the statements of db nimbus (query id, calls, rows, mean exec ms, text).
eq_dump_statements() {
  local oid
  oid=$(psql -d postgres -At -c "SELECT oid FROM pg_database WHERE datname = 'nimbus'")
  psql -d bench -At -F$'\t' -c "SELECT queryid, calls, rows, round((total_exec_time / greatest(calls, 1))::numeric, 3),
      regexp_replace(query, '\s+', ' ', 'g')
    FROM pg_stat_statements WHERE dbid = $oid AND calls > 0 AND query !~* 'pg_stat_statements' ORDER BY calls DESC" >"$1"
}

# eq_db_init: database nimbus_eq, a copy of Nimbus's database as it is after the setup and the
# warm-up (schema, functions, triggers, the user, the device token, the databases, zones and the
# AppEvent schema rows; its records table starts empty), in the same cluster.
eq_db_init() {
  [ -z "${EQ_DB_READY:-}" ] || return 0
  local dump=$PG_BIN/pg_dump; [ -x "$dump" ] || dump=$(find_tool pg_dump || true)
  [ -n "$dump" ] || { say "equal work: pg_dump not found"; return 1; }
  psql -d postgres -c "CREATE DATABASE $EQ_DB" >/dev/null
  "$dump" -h "$SOCK" -U nimbus --no-owner --exclude-table-data=records nimbus >"$WORK/eq-dump.sql" || return 1
  psql -d "$EQ_DB" -f "$WORK/eq-dump.sql" >/dev/null 2>"$WORK/eq-dump.err" || { cat "$WORK/eq-dump.err" >&2; return 1; }
  EQ_DB_READY=1
}
# eq_copy_zone ZONE: the zone's records and sequence from db nimbus into the copy (for changes).
eq_copy_zone() {
  local zid seq
  zid=$(psql -d nimbus -At -c "SELECT id FROM zones WHERE zone_name = '$1'")
  seq=$(psql -d nimbus -At -c "SELECT change_seq FROM zones WHERE id = $zid")
  psql -d "$EQ_DB" -c "DELETE FROM records WHERE zone_id = $zid" >/dev/null
  psql -d nimbus -c "\\copy (SELECT * FROM records WHERE zone_id = $zid) TO STDOUT" | psql -d "$EQ_DB" -c "\\copy records FROM STDIN"
  psql -d "$EQ_DB" -c "UPDATE zones SET change_seq = $seq WHERE id = $zid" -c 'VACUUM ANALYZE records' >/dev/null
  say "  copied $(psql -d "$EQ_DB" -At -c "SELECT count(*) FROM records WHERE zone_id = $zid") records of zone $1 into $EQ_DB"
}

EQ_READY=" "
# eq_prepare WORKLOAD: capture Nimbus's statements for WORKLOAD in a short extra run and build the
# replay (bench/equalwork.py) into WORK/eq; sets EQ_READY to include WORKLOAD when it works.
eq_prepare() {
  local w=$1 zs="" b=1 f rc
  mkdir -p "$WORK/eq"
  eq_db_init || { say "equal work: could not copy the nimbus database; no equal-work reference"; return 0; }
  case $w in
    one) zs=$ONE_ZONES ;; many) zs=$MANY_ZONES ;; batch) zs=$BATCH_ZONE_LIST; b=$BATCH ;; changes) zs=$FEED_ZONE ;;
  esac
  if [ "$w" = changes ]; then
    eq_copy_zone "$FEED_ZONE"
  else
    # The first requests into a zone take the full path (reads, then the write); prime the zones first
    # so that the capture sees the steady state the measured runs see.
    nimbus_modify "eqprime-$w" 0 "$b" "$zs" 1 >/dev/null 2>&1
  fi
  say "equal work, $w: capturing Nimbus's statements (${WARMUP}s run with pg_stat_statements and a 10% sample of executions logged)"
  eq_capture_on
  f=$WORK/runs/eqcap-$w-nimbus-0.txt
  if [ "$w" = changes ]; then
    "$RECLOAD" changes 127.0.0.1 "$PORT" "/database/1/$CONTAINER/development/private/records/changes" "$TOKEN" \
      "$CLIENTS" "$WARMUP" "$FEED_ZONE" 200 >"$f" 2>/dev/null || true
  else
    "$RECLOAD" modify 127.0.0.1 "$PORT" "/database/1/$CONTAINER/development/private/records/modify" "$TOKEN" \
      "$CLIENTS" "$WARMUP" "$b" "$zs" "eqcap-$w" >"$f" 2>/dev/null || true
  fi
  eq_dump_statements "$WORK/eq/$w.statements"
  tail -c +$((EQ_LOG_OFFSET + 1)) "$SOCK/postgres.log" >"$WORK/eq/$w.log"
  eq_capture_off
  local zone_ids
  zone_ids=$(psql -d nimbus -At -c "SELECT string_agg(id::text, ',' ORDER BY id) FROM zones WHERE zone_name = ANY(string_to_array('$zs', ','))")
  rc=0
  python3 "$ROOT/bench/equalwork.py" "$WORK/eq/$w.statements" "$WORK/eq/$w.log" "$WORK/eq" "$w" "eqcap-$w" "$zone_ids" \
    "$(kv "$f" records)" || rc=$?
  rm -f "$WORK/eq/$w.log"
  sed 's/^/  /' "$WORK/eq/$w.notes" >&2
  [ "$rc" = 0 ] || { say "equal work, $w: nothing to replay (exit $rc)"; return 0; }
  # A few transactions, to check that the replay runs (and writes) before it is measured.
  local -a eqargs
  mapfile -t eqargs <"$WORK/eq/$w.args"
  local before after
  before=$(psql -d "$EQ_DB" -At -c 'SELECT count(*) FROM records')
  if ! "$PGBENCH" -n -M prepared -c 1 -t 20 "${eqargs[@]}" -h "$SOCK" -U nimbus "$EQ_DB" >"$WORK/eq/$w.check" 2>&1 \
     || grep -qi 'error' "$WORK/eq/$w.check" \
     || [ "$(awk -F': ' '/^number of failed transactions/ {split($2, a, " "); if (a[1] > 0) print a[1]; exit}' "$WORK/eq/$w.check")" != "" ]; then
    say "equal work, $w: the replay fails: $(grep -m3 -i 'error' "$WORK/eq/$w.check" | cut -c1-300 | tr '\n' ' ')"
    return 0
  fi
  after=$(psql -d "$EQ_DB" -At -c 'SELECT count(*) FROM records')
  say "  replay check: 20 transactions ran, $((after - before)) records written"
  EQ_READY+="$w "
}
eq_ready() { case $EQ_READY in *" $1 "*) return 0 ;; esac; return 1; }

# eq_run WORKLOAD ROUND CLIENTS: the replay for SECS with CLIENTS pgbench clients, recorded as
# variant equal-cCLIENTS.
eq_run() {
  local w=$1 r=$2 c=$3 f=$WORK/runs/$1-equal-c$3-$2.txt j=$(($3 < 2 ? $3 : 2))
  local -a eqargs
  mapfile -t eqargs <"$WORK/eq/$w.args"
  measure_start
  PGOPTIONS="-c synchronous_commit=on" "$PGBENCH" -n -M prepared -c "$c" -j "$j" -T "$SECS" "${eqargs[@]}" \
    -h "$SOCK" -U nimbus "$EQ_DB" >"$f" 2>&1 || say "pgbench exited $? ($w equal-c$c round $r): $(grep -m3 -i error "$f" | cut -c1-300 | tr '\n' ' ')"
  measure_end pgbench
  local tps lat n failed rate
  tps=$(awk '/^tps = / {print $3; exit}' "$f")
  [ -n "$tps" ] || { cat "$f" >&2; die "could not parse pgbench output ($w equal-c$c round $r)"; }
  lat=$(awk '/^latency average = / {print $4; exit}' "$f")
  n=$(awk -F': ' '/^number of transactions actually processed/ {print $2; exit}' "$f")
  failed=$(awk -F': ' '/^number of failed transactions/ {split($2, a, " "); print a[1]; exit}' "$f")
  # records/s: each script's tps (printed per script when there are several) x its records per transaction
  rate=$(awk -v tps="$tps" 'FNR == NR { per[$1] = $3; n++; next }
    /^SQL script [0-9]+:/ { k = $3 + 0 }
    k && /tps = / { t = $0; sub(/.*tps = /, "", t); sub(/\).*/, "", t); r += t * per[k]; seen = 1; k = 0 }
    END { if (!seen) r = tps * per[1]; printf "%.1f", r }' "$WORK/eq/$w.records" "$f")
  record_run "$w" "equal-c$c" "$r" "$rate" "$tps" "${lat:-0}" 0 0 0 "${n:-0}" 0 0 0 0 "${failed:-0}"
  say "  $w pgbench equal-work replay -c$c round $r: $rate records/s ($tps tx/s), latency avg ${lat:-?} ms, failed ${failed:-0};" \
      "cores nimbus/pg/client/other $(tail -1 "$RESULTS" | awk '{print $16 "/" $17 "/" $18 "/" $19}')"
}

# eq_summary: the equal-work table of the report (uses records.sh's median, median_per_rec, ratio, desc).
# The reference is the fastest of the replay's client counts (EQ_CLIENTS); the first count (Nimbus's
# own client count) is shown beside it.
eq_summary() {
  local w v best bestrate c rate first firstrate nim nu np pp ok1 ok2 missed=""
  echo "equal-work reference (issue #18): pgbench -M prepared replaying Nimbus's own statements (captured per workload"
  echo "  from pg_stat_statements + a logged sample of their parameters) on a copy of Nimbus's database ($EQ_DB), same cluster;"
  echo "  reference = the fastest of pgbench -c $(echo $EQ_CLIENTS | sed 's/ /, -c /g'); CPU in µs per record, median over rounds"
  printf '  %-28s %9s %9s %-9s %6s %-4s %9s %6s %8s %8s %6s %-4s %8s\n' workload "nimbus" "equal" "(best)" ratio ">=$EQ_TARGET" \
    "eq-c${EQ_CLIENTS%% *}" ratio "nimbus" "its pg" "n/pg" "<=$EQ_CPU_TARGET" "eq pg"
  for w in $WORKLOADS; do
    nim=$(median "$w" nimbus 4)
    nu=$(median_per_rec "$w" nimbus 16); np=$(median_per_rec "$w" nimbus 17)
    if ! eq_ready "$w"; then
      printf '  %-28s %9.0f %9s %-9s %6s %-4s %9s %6s %8s %8s %6s %-4s %8s\n' "$(desc "$w")" "$nim" - "(none)" - - - - "$nu" "$np" \
        "$(ratio "$nu" "$np")" "$(awk -v a="$nu" -v b="$np" -v t="$EQ_CPU_TARGET" 'BEGIN {print (b > 0 && a / b <= t ? "ok" : "MISS")}')" -
      missed+="${missed:+, }$w (no replay)"
      continue
    fi
    best="" bestrate=0 first="" firstrate=""
    for c in $EQ_CLIENTS; do
      rate=$(median "$w" "equal-c$c" 4)
      [ -n "$first" ] || { first=$c; firstrate=$rate; }
      if awk -v a="$rate" -v b="$bestrate" 'BEGIN {exit !(a > b)}'; then best=$c; bestrate=$rate; fi
    done
    pp=$(median_per_rec "$w" "equal-c$best" 17)
    ok1=$(awk -v r="$(ratio "$nim" "$bestrate")" -v t="$EQ_TARGET" 'BEGIN {print (r >= t ? "ok" : "MISS")}')
    ok2=$(awk -v a="$nu" -v b="$np" -v t="$EQ_CPU_TARGET" 'BEGIN {print (b > 0 && a / b <= t ? "ok" : "MISS")}')
    [ "$ok1" = ok ] || missed+="${missed:+, }$w rate ($(ratio "$nim" "$bestrate"))"
    [ "$ok2" = ok ] || missed+="${missed:+, }$w CPU ($(ratio "$nu" "$np"))"
    printf '  %-28s %9.0f %9.0f %-9s %6s %-4s %9.0f %6s %8s %8s %6s %-4s %8s\n' "$(desc "$w")" "$nim" "$bestrate" "(-c$best)" \
      "$(ratio "$nim" "$bestrate")" "$ok1" "$firstrate" "$(ratio "$nim" "$firstrate")" "$nu" "$np" "$(ratio "$nu" "$np")" "$ok2" "$pp"
  done
  echo "  columns: records/s of Nimbus and of the replay, Nimbus ÷ replay (target >= $EQ_TARGET); the replay with Nimbus's client count;"
  echo "  CPU µs/record of Nimbus, of its PostgreSQL during the Nimbus runs, their ratio (target <= $EQ_CPU_TARGET), and of the replay's PostgreSQL"
  echo "  equal-work targets missed: ${missed:-none}"
  echo "  replayed statements (capture run; weights = calls):"
  for w in $WORKLOADS; do [ -f "$WORK/eq/$w.notes" ] && sed 's/^/    /' "$WORK/eq/$w.notes"; done
}
EQ_TARGET=0.7
EQ_CPU_TARGET=0.5
