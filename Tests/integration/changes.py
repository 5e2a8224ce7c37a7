#!/usr/bin/env python3
"""Follows a zone's records/changes to the end and prints what a device would hold.

usage: changes.py URL TOKEN ZONE [SYNC_TOKEN|-] [OUT.json]

URL is the records/changes endpoint (http://host:port/database/1/<container>/<env>/private/records/changes).
Prints one JSON object: {"status": 200, "records": {name: record}, "deleted": [names], "token": "..."}
or, when a page is refused, {"status": 410, "serverErrorCode": "...", "reason": "..."}.
"""
import json
import sys
import urllib.error
import urllib.request


def fetch(url, token, zone, sync_token):
    records, deleted = {}, []
    pages = 0
    while True:
        body = {"zoneID": {"zoneName": zone}, "resultsLimit": 400}
        if sync_token:
            body["syncToken"] = sync_token
        request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                         headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                answer = json.load(response)
        except urllib.error.HTTPError as error:
            refused = json.load(error)
            return {"status": error.code, "serverErrorCode": refused.get("serverErrorCode"), "reason": refused.get("reason")}
        for record in answer["records"]:
            if record.get("deleted"):
                records.pop(record["recordName"], None)
                deleted.append(record["recordName"])
            else:
                records[record["recordName"]] = record
        sync_token = answer["syncToken"]
        pages += 1
        if not answer.get("moreComing"):
            return {"status": 200, "records": records, "deleted": deleted, "token": sync_token, "pages": pages}


def main():
    url, token, zone = sys.argv[1:4]
    since = sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] != "-" else None
    result = fetch(url, token, zone, since)
    text = json.dumps(result, sort_keys=True)
    if len(sys.argv) > 5:
        with open(sys.argv[5], "w") as out:
            out.write(text)
    else:
        print(text)


if __name__ == "__main__":
    main()
