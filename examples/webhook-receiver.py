#!/usr/bin/env python3
"""A partner's webhook endpoint, for trying checkin by hand: verifies each webhook's
Standard Webhooks signature with the endpoint's secret and that its timestamp is within
--tolerance seconds of this machine's clock (so that a recorded webhook cannot be replayed
later), prints its body as one JSON line, and answers 204 (401 to a webhook that fails
either check, which checkin retries).

    python3 examples/webhook-receiver.py --port 9000 --secret whsec_...
"""
import argparse
import base64
import hashlib
import hmac
import http.server
import sys
import threading
import time


def verifies(secret: str, headers, body: bytes) -> bool:
    """True when one of the `v1,` signatures is the HMAC-SHA256 of `id.timestamp.body`."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    offered = (headers.get("webhook-signature") or "").split()
    return any(hmac.compare_digest(s, "v1," + expected) for s in offered)


def timely(headers, tolerance: float) -> bool:
    """True when `webhook-timestamp` (seconds since the epoch) is within `tolerance` of now."""
    try:
        sent = int(headers.get("webhook-timestamp") or "")
    except ValueError:
        return False
    return abs(time.time() - sent) <= tolerance


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--secret", required=True, help="the endpoint's whsec_ secret")
    parser.add_argument(
        "--tolerance", type=float, default=300, help="seconds a webhook's timestamp may be from now (default 300)")
    arguments = parser.parse_args()
    # Webhooks are answered on threads of their own: one line is written whole at a time.
    printing = threading.Lock()

    class Endpoint(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            if not verifies(arguments.secret, self.headers, body):
                print("refused a webhook whose signature does not verify", file=sys.stderr, flush=True)
                self.send_response(401)
            elif not timely(self.headers, arguments.tolerance):
                print("refused a webhook whose timestamp is not within the tolerance", file=sys.stderr, flush=True)
                self.send_response(401)
            else:
                with printing:
                    sys.stdout.write(body.decode() + "\n")
                    sys.stdout.flush()
                self.send_response(204)
            self.end_headers()

        def log_message(self, *_) -> None:
            pass

    http.server.ThreadingHTTPServer(("127.0.0.1", arguments.port), Endpoint).serve_forever()


if __name__ == "__main__":
    main()
