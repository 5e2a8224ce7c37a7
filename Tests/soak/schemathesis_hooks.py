"""Schemathesis hooks for Tests/soak/schemathesis.sh (loaded through SCHEMATHESIS_HOOKS).

1. `peer_sees_none_of_owner_objects`, a custom check: every successful read that the owner (alice)
   makes is replayed with the peer's token (bob, who never writes anything), and every URL that an
   answer hands the owner (downloadURL, upload url, webcourierURL) is tried with the peer's token.
   The peer must get none of the owner's records, zones, subscriptions, notifications or bytes:
   docs/api.md reports a foreign object exactly as a missing one. (Schemathesis' own
   `object_level_authorization` check replays only GET reads of path ids, and almost every Nimbus
   read is a POST with names in the body; this check covers those.)
2. `before_call`: a generated `wait` above 2 s becomes 1 s, so that a case does not hold a
   long-poll for up to 55 s (long-polls have their own scenarios); out-of-range values stay, so
   that their rejection is still tested.
"""

from __future__ import annotations

import atexit
import json
import os
from collections import Counter

import requests
import schemathesis

PEER_TOKEN = os.environ.get("NIMBUS_PEER_TOKEN", "")
DEFAULT_ZONE = "_defaultZone"
_session = requests.Session()
_probed: set[str] = set()
# How many replays and URL probes ran, written at exit for the script's closing figures.
_counts: Counter[str] = Counter()


@atexit.register
def _write_counts() -> None:
    path = os.environ.get("NIMBUS_PEER_PROBE_REPORT")
    if path:
        with open(path, "w") as report:
            report.write(" ".join(f"{key}={value}" for key, value in sorted(_counts.items())) + "\n")


def _as_peer(prepared: requests.PreparedRequest) -> requests.Response:
    request = prepared.copy()
    request.headers["Authorization"] = f"Bearer {PEER_TOKEN}"
    return _session.send(request, timeout=30)


def _peer_get(url: str) -> requests.Response:
    return _session.get(url, headers={"Authorization": f"Bearer {PEER_TOKEN}"}, timeout=30)


def _strings_under(value: object, key: str) -> list[str]:
    found: list[str] = []
    if isinstance(value, dict):
        for name, item in value.items():
            if name == key and isinstance(item, str):
                found.append(item)
            else:
                found.extend(_strings_under(item, key))
    elif isinstance(value, list):
        for item in value:
            found.extend(_strings_under(item, key))
    return found


def _json(response) -> object:
    try:
        return json.loads(response.content)
    except (ValueError, TypeError):
        return None


def _objects(body: object, member: str) -> list[dict]:
    """Items of `body[member]` that are objects and not item errors."""
    if not isinstance(body, dict) or not isinstance(body.get(member), list):
        return []
    return [item for item in body[member] if isinstance(item, dict) and "serverErrorCode" not in item]


def _leaks_in_read(operation: str, owner_body: object, peer: requests.Response) -> str | None:
    if peer.status_code != 200:
        return None
    body = _json(peer)
    if operation.endswith(("records/lookup", "records/query", "records/changes")):
        records = _objects(body, "records")
        if records:
            return f"the peer got {len(records)} record(s), e.g. {json.dumps(records[0])[:300]}"
    elif operation.endswith(("zones/list", "zones/lookup", "zones/changes")):
        zones = [z for z in _objects(body, "zones") if (z.get("zoneID") or {}).get("zoneName") != DEFAULT_ZONE]
        if zones:
            return f"the peer got zone(s) {[z.get('zoneID') for z in zones][:5]}"
    elif operation.endswith(("subscriptions/list", "subscriptions/lookup")):
        subscriptions = _objects(body, "subscriptions")
        if subscriptions:
            return f"the peer got subscription(s) {[s.get('subscriptionID') for s in subscriptions][:5]}"
    elif operation.endswith("users/current"):
        mine = owner_body.get("userRecordName") if isinstance(owner_body, dict) else None
        if mine is not None and isinstance(body, dict) and body.get("userRecordName") == mine:
            return f"the peer is told it is {mine}"
    elif operation.startswith("/webcourier/") or operation.startswith("/assets/1/download/"):
        return f"the peer was answered {peer.status_code} on the owner's {operation}"
    return None


READ_OPERATIONS = ("records/lookup", "records/query", "records/changes", "zones/list", "zones/lookup",
                   "zones/changes", "users/current", "subscriptions/list", "subscriptions/lookup")


@schemathesis.check
def peer_sees_none_of_owner_objects(ctx, response, case):
    """The peer's token never reaches what the owner's answers show (docs/api.md: a foreign object is a missing one)."""
    if not PEER_TOKEN or not 200 <= response.status_code < 300:
        return None
    path = case.operation.path
    body = _json(response)
    if path.endswith(READ_OPERATIONS) or path.startswith(("/webcourier/", "/assets/1/download/")):
        leak = _leaks_in_read(path, body, _as_peer(response.request))
        _counts["replayed_reads"] += 1
        if leak:
            _counts["leaks"] += 1
            raise AssertionError(f"Object-level authorization: {case.method} {path} replayed with another user's token: {leak}")
    # URLs the answer hands the owner: another user must get NOT_FOUND for each.
    probes = [("GET", url) for url in _strings_under(body, "downloadURL")]
    probes += [("GET", url) for url in _strings_under(body, "webcourierURL")]
    if path.endswith("assets/upload"):
        probes += [("POST", url) for url in _strings_under(body, "url")]
    for method, url in probes:
        if url in _probed:
            continue
        _probed.add(url)
        if method == "GET":
            peer = _peer_get((url + ("&" if "?" in url else "?") + "wait=0") if "/webcourier/" in url else url)
        else:
            peer = _session.post(url, data=b"", headers={"Authorization": f"Bearer {PEER_TOKEN}"}, timeout=30)
        _counts["probed_urls"] += 1
        if peer.status_code != 404:
            _counts["leaks"] += 1
            raise AssertionError(
                f"Object-level authorization: {method} {url} (from the owner's {case.method} {path}) "
                f"with another user's token answered {peer.status_code}, not 404")
    return None


@schemathesis.hook
def before_call(context, case, kwargs):
    """Keep generated long-polls short (see the module comment)."""
    body = case.body
    if isinstance(body, dict) and isinstance(body.get("wait"), int) and not isinstance(body.get("wait"), bool) and 2 < body["wait"] <= 55:
        body["wait"] = 1
    query = case.query
    if isinstance(query, dict) and "wait" in query:
        try:
            seconds = int(query["wait"])
        except (TypeError, ValueError):
            return
        if 2 < seconds <= 55:
            query["wait"] = 1
