#!/usr/bin/env python3
"""An example remote policy service: a receptionist that books an appointment.

This is an EXAMPLE, not part of the runner. It shows the remote-policy wire
contract the runner speaks (README, "Remote policy"), with nothing but the
Python standard library, so you can read it in one go and replace ``decide``
with your own logic: a state machine, a database lookup, a CRM, an LLM.

    python3 examples/receptionist_policy.py [--port 8080] [--token=SECRET]

The flow has three nodes and shows all three actions and variables that
accumulate across turns:

* ``greeting``: the agent finds out which day the caller wants. Its tools are
  ``book_appointment(day)`` (a ``transition`` to ``confirm``, keeping the day)
  and ``opening_hours()`` (a ``stay`` that just says the hours).
* ``confirm``: the agent reads the day back. ``confirm_booking(confirmed)``
  either ``end``s the call (disposition ``booked``) or goes back to
  ``greeting`` to pick another day.

``brain_config`` from the runner may set ``{"business": "..."}`` to name the
business in the prompts. With ``--token``, every request must carry
``Authorization: Bearer <token>``; others get 401.
"""

from __future__ import annotations

import argparse
import contextlib
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

OPENING_HOURS = "We are open Monday to Friday, nine to five."


def tool(name: str, description: str, **properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "params": {"type": "object", "properties": properties, "required": list(properties)},
    }


def greeting_node(business: str, vars: dict[str, Any]) -> dict[str, Any]:
    return {
        "node_id": "greeting",
        "system_prompt": (
            f"You are the friendly receptionist of {business}. Find out which day the caller "
            "would like an appointment, then call book_appointment with that day. If they ask "
            "when you are open, call opening_hours."
        ),
        "tools": [
            tool("book_appointment", "Book the day the caller asked for.", day={"type": "string"}),
            tool("opening_hours", "Say when the business is open."),
        ],
        "collected_vars": vars,
    }


def confirm_node(business: str, vars: dict[str, Any]) -> dict[str, Any]:
    return {
        "node_id": "confirm",
        "system_prompt": (
            f"You are the receptionist of {business}. The caller asked for "
            f"{vars['requested_day']}. Ask them to confirm, then call confirm_booking with "
            "confirmed true or false."
        ),
        "tools": [
            tool(
                "confirm_booking",
                "Whether the caller confirmed the day.",
                confirmed={"type": "boolean"},
            )
        ],
        "collected_vars": vars,
    }


def start(body: dict[str, Any]) -> dict[str, Any]:
    """``POST /session``: the first node of a new call."""
    config = body.get("brain_config") or {}
    business = str(config.get("business", "the clinic"))
    return greeting_node(business, {"business": business})


def decide(body: dict[str, Any]) -> dict[str, Any]:
    """``POST /tool-call``: what the agent does about the tool the model called."""
    node, vars = body.get("node_id"), dict(body.get("collected_vars") or {})
    business = str(vars.get("business", "the clinic"))
    call = body.get("tool") or {}
    name, args = call.get("name"), call.get("args") or {}
    if node == "greeting" and name == "book_appointment":
        vars["requested_day"] = str(args.get("day", "")).strip() or "the first free day"
        return {
            "action": "transition",
            **confirm_node(business, vars),
            "say": f"Sure, booking you for {vars['requested_day']}. Shall I confirm?",
            "finished": False,
        }
    if node == "greeting" and name == "opening_hours":
        return {
            "action": "stay",
            "say": OPENING_HOURS,
            "node_id": node,
            "collected_vars": vars,
            "finished": False,
        }
    if node == "confirm" and name == "confirm_booking":
        if args.get("confirmed") in (True, "true", "yes"):
            vars["booked_day"] = vars.get("requested_day")
            return {
                "action": "end",
                "say": f"You are booked for {vars['booked_day']}. Goodbye!",
                "disposition": "booked",
                "node_id": "done",
                "collected_vars": vars,
                "finished": True,
            }
        vars.pop("requested_day", None)
        return {
            "action": "transition",
            **greeting_node(business, vars),
            "say": "No problem. Which day would suit you better?",
            "finished": False,
        }
    # A tool this node does not know: change nothing.
    return {"action": "stay", "node_id": node, "collected_vars": vars, "finished": False}


def handler(token: str | None) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if token is not None and self.headers.get("Authorization") != f"Bearer {token}":
                return self._answer(401, {"error": "missing or wrong bearer token"})
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except json.JSONDecodeError:
                return self._answer(400, {"error": "the body is not JSON"})
            if self.path == "/session":
                return self._answer(200, start(body))
            if self.path == "/tool-call":
                return self._answer(200, decide(body))
            return self._answer(404, {"error": f"no route {self.path}"})

        def _answer(self, status: int, body: dict[str, Any]) -> None:
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            print(f"policy: {self.command} {self.path} -> {args[1] if len(args) > 1 else ''}")

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--token", help="require Authorization: Bearer TOKEN")
    args = parser.parse_args()
    server = ThreadingHTTPServer((args.host, args.port), handler(args.token))
    print(
        f"receptionist policy (an example) on http://{args.host}:{server.server_port}", flush=True
    )
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()


if __name__ == "__main__":
    main()
