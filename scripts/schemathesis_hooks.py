"""Schemathesis hooks of scripts/api-test.sh.

A POST resent with an Idempotency-Key the tool used before, with the same body, is answered
with the first answer again (`Idempotent-Replayed: true`): a 201 naming what that first
request created, as documented. When what it created was deleted since (by another test
case, in another phase or worker), a GET of it is a 404, which is right; the tool's check
that a created resource can be read (ST302) does not know of replays and reports it. Such
failures, and only those, are dropped: the ids that replayed creations named are noted
as the answers come in, and a failure is dropped only when the resource it could not read
is one of them. Every other failure of that check stands.
"""

import json
import threading

import schemathesis

_lock = threading.Lock()
_ids_named_by_replays: set[str] = set()


def _header(response, name: str) -> str | None:
    values = response.headers.get(name.lower())
    if not values:
        return None
    return values[0] if isinstance(values, list) else values


@schemathesis.hook
def after_call(context, case, response):
    if case.method.upper() != "POST" or _header(response, "Idempotent-Replayed") != "true":
        return
    if not 200 <= response.status_code < 300:
        return
    try:
        body = json.loads(response.content)
    except (ValueError, TypeError):
        return
    if isinstance(body, dict) and isinstance(body.get("id"), str):
        with _lock:
            _ids_named_by_replays.add(body["id"])


@schemathesis.hook
def filter_failure(context, failure, case, response):
    if getattr(failure, "code", None) != "ST302":
        return True
    named = set(str(value) for value in (case.path_parameters or {}).values())
    with _lock:
        return not (named & _ids_named_by_replays)
