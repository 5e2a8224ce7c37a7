#!/usr/bin/env python3
"""The scenarios' one JSON reader (Tests/integration/lib.sh calls it): a real parser instead of
regular expressions over the text. Reads one JSON document (or several, back to back) from stdin.

  read-json.py first NAME          the first value of key NAME, in document order
  read-json.py last NAME           the last value of key NAME
  read-json.py record-items        each record item of the answer's lists, one compact line each
  read-json.py item-codes          each record item's serverErrorCode, or `ok`
  read-json.py record-summary      `NAME TAG` per live record, `NAME -` per tombstone (serverRecords too)
  read-json.py field-value NAME F  record NAME's field F value as raw JSON
  read-json.py objects KEY[,KEY]  each object in a list that has KEY, one compact line each
  read-json.py object KEY=VALUE   the first object in a list whose KEY is VALUE, compact
  read-json.py lasts KEY...       the last value of each KEY (`-` when absent), joined by spaces
  read-json.py rows KEY F[=D]...  per such object, the first value of each F inside it (or D, else
                                  empty), joined by spaces: one line per object

Scalars print as the server wrote them: strings unquoted (decoded), numbers in their source
spelling, `true`/`false`/`null`. An object or array prints as compact JSON. Exit status 1: absent;
2: the input is not JSON (the reason goes to stderr).
"""
import json
import sys


class Number(str):
    """A number kept in its source spelling (so 1.0 stays 1.0 and 10000000000000001 stays exact)."""


def parse(text):
    decoder = json.JSONDecoder(parse_int=Number, parse_float=Number, parse_constant=Number)
    documents, index = [], 0
    while True:
        while index < len(text) and text[index] in " \t\r\n":
            index += 1
        if index >= len(text):
            return documents
        value, index = decoder.raw_decode(text, index)
        documents.append(value)


def compact(value):
    if isinstance(value, Number):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, list):
        return "[" + ",".join(compact(item) for item in value) + "]"
    return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + compact(v) for k, v in value.items()) + "}"


def scalar(value):
    return value if isinstance(value, str) else compact(value)


def values_of(node, name):
    """Every value of key `name`, in document order (a key's value before what is nested in it)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == name:
                yield value
            yield from values_of(value, name)
    elif isinstance(node, list):
        for item in node:
            yield from values_of(item, name)


def record_items(node):
    """The dicts in lists whose first key is recordName or uuid (a record, tombstone or error item);
    what is nested inside such an item (a REFERENCE_LIST, a serverRecord) is not an item."""
    if isinstance(node, dict):
        for value in node.values():
            yield from record_items(value)
    elif isinstance(node, list):
        for item in node:
            if isinstance(item, dict) and next(iter(item), None) in ("recordName", "uuid"):
                yield item
            else:
                yield from record_items(item)


def objects_with(node, key):
    """The objects in lists that have `key` (or one of `a,b`), in document order (not those nested
    in one)."""
    if isinstance(node, dict):
        for value in node.values():
            yield from objects_with(value, key)
    elif isinstance(node, list):
        for item in node:
            if isinstance(item, dict) and any(k in item for k in key.split(",")):
                yield item
            else:
                yield from objects_with(item, key)


def records_anywhere(node):
    if isinstance(node, dict):
        if "recordName" in node and "recordType" in node and ("recordChangeTag" in node or node.get("deleted") is True):
            yield node
        for value in node.values():
            yield from records_anywhere(value)
    elif isinstance(node, list):
        for item in node:
            yield from records_anywhere(item)


def main(argv):
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    text = sys.stdin.buffer.read().decode("utf-8", errors="replace")
    try:
        documents = parse(text)
    except ValueError as error:
        sys.stderr.write(f"read-json.py: not JSON ({error}): {text[:200]!r}\n")
        return 2
    command, args = argv[1], argv[2:]
    out = []
    if command in ("first", "last"):
        found = [value for document in documents for value in values_of(document, args[0])]
        if not found:
            return 1
        out.append(scalar(found[0] if command == "first" else found[-1]))
    elif command == "lasts":
        cells = []
        for key in args:
            found = [value for document in documents for value in values_of(document, key)]
            cells.append(scalar(found[-1]) if found else "-")
        out.append(" ".join(cells))
    elif command == "record-items":
        out = [compact(item) for document in documents for item in record_items(document)]
    elif command == "item-codes":
        for document in documents:
            for item in record_items(document):
                code = item.get("serverErrorCode")
                out.append("ok" if code is None else scalar(code))
    elif command == "record-summary":
        for document in documents:
            for record in records_anywhere(document):
                tag = "-" if record.get("deleted") is True else scalar(record["recordChangeTag"])
                out.append(f"{scalar(record['recordName'])} {tag}")
    elif command == "field-value":
        for document in documents:
            for item in record_items(document):
                if item.get("recordName") == args[0]:
                    field = (item.get("fields") or {}).get(args[1])
                    if not isinstance(field, dict) or "value" not in field:
                        return 1
                    out.append(compact(field["value"]))
                    break
            if out:
                break
        if not out:
            return 1
    elif command == "objects":
        out = [compact(item) for document in documents for item in objects_with(document, args[0])]
    elif command == "object":
        key, _, wanted = args[0].partition("=")
        found = next((item for document in documents for item in objects_with(document, key)
                      if key in item and scalar(item[key]) == wanted), None)
        if found is None:
            return 1
        out.append(compact(found))
    elif command == "rows":
        for document in documents:
            for item in objects_with(document, args[0]):
                cells = []
                for column in args[1:]:
                    name, _, default = column.partition("=")
                    found = next(values_of(item, name), None)
                    cells.append(default if found is None else scalar(found))
                out.append(" ".join(cells))
    else:
        sys.stderr.write(f"read-json.py: unknown command {command}\n")
        return 2
    if out:
        sys.stdout.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
