#!/usr/bin/env bash
# kill -9 during asset uploads (issue 7, item 5). Three uploaders loop: an upload URL, 3 MiB of
# random bytes sent at 1.5 MB/s (so uploads are mid-stream most of the time), then a record that
# references the asset. Twice, while chunks of an unfinished upload are being written, nimbus is
# killed with SIGKILL and restarted on the same database. Afterwards:
#   - every acknowledged record's asset downloads byte-identical;
#   - the crash left incomplete uploads; `nimbus prune` keeps them while they are younger than an
#     hour (an upload may be streaming into another instance), and once they are older (the
#     scenario backdates them) `nimbus prune --asset-grace 0s` leaves no orphaned chunk at all:
#     no incomplete asset, no asset no record references, and the stored chunk bytes are exactly
#     the sizes of the remaining assets;
#   - the acknowledged records' assets still download byte-identical after the prune.
source "$(dirname "$0")/../lib.sh"

UPLOADERS=3 KILLS=2 FILES=6 SIZE=$((3 << 20))
STOP="$TEST_TMP/stop" URL_FILE="$TEST_TMP/url" ERRORS="$TEST_TMP/errors"
: >"$ERRORS"

start_store_server
nimbus_admin user add alice >/dev/null
issue_token TOKEN alice uploader
api_ok "$TOKEN" zones/modify '{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Files"}}}]}'
echo "$NIMBUS_URL" >"$URL_FILE"
for ((f = 0; f < FILES; f++)); do random_file "$TEST_TMP/file-$f" "$SIZE"; done

# uploader K: uploads and saves until STOP exists; `NAME FILE` per acknowledged record to acks-K.
uploader() {
  local k=$1 n=0 base out status body url checksum size receipt file
  while [ ! -e "$STOP" ]; do
    n=$((n + 1))
    file=$TEST_TMP/file-$(( (k * 7 + n) % FILES ))
    base=$(cat "$URL_FILE")
    out=$(curl -s --max-time 20 -X POST -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
      --data-binary '{"zoneID":{"zoneName":"Files"},"tokens":[{"recordType":"Blob","fieldName":"data"}]}' \
      -w ' %{http_code}' "$base$(api_path assets/upload)")
    status=${out##* } body=${out% *}
    [ "$status" = 200 ] || { sleep 0.2; continue; }
    url=$(json_field url "$body") || { echo "uploader $k: no url in $body" >>"$ERRORS"; continue; }
    out=$(curl -s --max-time 30 --limit-rate 1500k -X POST -H "Authorization: Bearer $TOKEN" -T "$file" -w ' %{http_code}' "$url")
    status=${out##* } body=${out% *}
    [ "$status" = 200 ] || { sleep 0.1; continue; }   # cut by the kill: the outcome is the server's to clean up
    checksum=$(json_field fileChecksum "$body") size=$(json_field size "$body") receipt=$(json_field receipt "$body")
    [ "$size" = "$SIZE" ] && [ "$checksum" = "$(b64_sha256 "$file")" ] || { echo "uploader $k: wrong answer $body" >>"$ERRORS"; continue; }
    out=$(curl -s --max-time 20 -X POST -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
      --data-binary "{\"zoneID\":{\"zoneName\":\"Files\"},\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordName\":\"f-$k-$n\",\"recordType\":\"Blob\",\"fields\":{\"data\":$(asset_field "$checksum" "$size" "$receipt")}}}]}" \
      -w ' %{http_code}' "$base$(api_path records/modify)")
    status=${out##* } body=${out% *}
    if [ "$status" = 200 ] && [ "$(item_codes "$body")" = ok ]; then
      echo "f-$k-$n $file" >>"$TEST_TMP/acks-$k"
    elif [ "$status" = 200 ]; then
      echo "uploader $k: save of f-$k-$n: $body" >>"$ERRORS"
    fi
  done
}

pids=()
for ((k = 1; k <= UPLOADERS; k++)); do
  : >"$TEST_TMP/acks-$k"
  uploader "$k" &
  pids+=($!)
  track_pid "$!"
done

# partial_chunks: chunk rows of unfinished uploads.
partial_chunks() { psql_db "SELECT count(*) FROM asset_chunks c JOIN assets a ON a.id = c.asset_id WHERE NOT a.complete"; }
for ((round = 1; round <= KILLS; round++)); do
  before=$(partial_chunks)
  sleep "$((2 + RANDOM % 2)).$((RANDOM % 10))"   # some uploads complete and are saved before the kill
  # Kill once an upload into this server has written chunks (more partial chunks than before).
  deadline=$(( $(now_ms) + 10000 ))
  while [ "$(partial_chunks)" -le "$before" ]; do
    [ "$(now_ms)" -lt "$deadline" ] || fail "round $round: no upload wrote chunks within 10 s"
    sleep 0.1
  done
  sleep "0.$((RANDOM % 5))"
  kill -KILL "$NIMBUS_PID"
  wait "$NIMBUS_PID" 2>/dev/null
  note "round $round: SIGKILL with $(( $(partial_chunks) - before )) chunks of unfinished uploads stored; $(cat "$TEST_TMP"/acks-* | wc -l) records saved so far"
  start_nimbus --database-url "$NIMBUS_DB_URL"
  echo "$NIMBUS_URL" >"$URL_FILE"
done
sleep 3
touch "$STOP"
for pid in "${pids[@]}"; do
  wait_exit "$pid" 60 || [ $? -ne 124 ] || fail "uploader pid $pid did not finish within 60 s"
done
[ -s "$ERRORS" ] && { head -n 10 "$ERRORS" >&2; fail "$(wc -l <"$ERRORS") uploader failures (above)"; }
cat "$TEST_TMP"/acks-* >"$TEST_TMP/acked"
acked=$(wc -l <"$TEST_TMP/acked")
[ "$acked" -ge 3 ] || fail "only $acked records with assets were acknowledged: the run proves little"

# check_downloads WHAT: every acknowledged record's asset downloads byte-identical.
check_downloads() {
  local name file url
  while read -r name file; do
    api_ok "$TOKEN" records/lookup "{\"zoneID\":{\"zoneName\":\"Files\"},\"records\":[{\"recordName\":\"$name\"}]}"
    url=$(asset_member "$name" data downloadURL) || fail "$1: $name has no downloadURL: ${HTTP_BODY:0:300}"
    asset_get "$TOKEN" "$url" "$TEST_TMP/download"
    expect_status 200 "$1: download of $name"
    expect_same_file "$file" "$TEST_TMP/download" "$1: $name"
  done <"$TEST_TMP/acked"
}
check_downloads "after the kills"
ok "$acked acknowledged records: every asset downloads byte-identical after $KILLS kills"

incomplete=$(psql_db "SELECT count(*) FROM assets WHERE NOT complete")
chunks=$(psql_db "SELECT count(*) FROM asset_chunks c JOIN assets a ON a.id = c.asset_id WHERE NOT a.complete")
note "the kills left $incomplete incomplete uploads with $chunks chunks"
[ "$incomplete" -gt 0 ] || note "no incomplete upload was left (every cut upload was cleaned up by the server)"

run_prune
[ "$PRUNE_STATUS" = 0 ] || fail "nimbus prune exited $PRUNE_STATUS: $PRUNE_ERR"
[ "$(psql_db "SELECT count(*) FROM assets WHERE NOT complete")" = "$incomplete" ] \
  || fail "nimbus prune removed incomplete uploads younger than an hour (they may be streaming into another instance)"
ok "nimbus prune keeps the $incomplete incomplete uploads while they are younger than an hour"

# An hour later (simulated): the sweep removes them, and --asset-grace 0s every unreferenced asset.
psql_db "UPDATE assets SET created_at = created_at - interval '2 hours' WHERE NOT complete" >/dev/null
run_prune --asset-grace 0s
[ "$PRUNE_STATUS" = 0 ] || fail "nimbus prune --asset-grace 0s exited $PRUNE_STATUS: $PRUNE_ERR"
read -r left unreferenced orphan_chunks chunk_bytes asset_bytes <<<"$(psql_db "
  SELECT (SELECT count(*) FROM assets WHERE NOT complete) || ' ' ||
         (SELECT count(*) FROM assets a WHERE a.complete AND NOT EXISTS (
            SELECT 1 FROM asset_references r WHERE r.database_id = a.database_id AND r.sha256 = a.sha256 AND r.size = a.size)) || ' ' ||
         (SELECT count(*) FROM asset_chunks c WHERE NOT EXISTS (SELECT 1 FROM assets a WHERE a.id = c.asset_id AND a.complete)) || ' ' ||
         (SELECT COALESCE(sum(length(bytes)), 0) FROM asset_chunks) || ' ' ||
         (SELECT COALESCE(sum(size), 0) FROM assets)" | tr -d '\n')"
[ "$left" = 0 ] || fail "$left incomplete uploads survived the prune"
[ "$unreferenced" = 0 ] || fail "$unreferenced unreferenced assets survived nimbus prune --asset-grace 0s"
[ "$orphan_chunks" = 0 ] || fail "$orphan_chunks chunks belong to no complete asset"
[ "$chunk_bytes" = "$asset_bytes" ] || fail "the chunks hold $chunk_bytes bytes, the assets $asset_bytes"
assets=$(psql_db "SELECT count(*) FROM assets")
ok "after nimbus prune: 0 incomplete uploads, 0 unreferenced assets, 0 orphaned chunks; $assets assets, $chunk_bytes chunk bytes = their sizes"
check_downloads "after the prune"
ok "every acknowledged record's asset still downloads byte-identical after the prune"
expect_no_server_errors
