"""The example policy service starts for a call whatever token it is given, and says why not.

``ExamplePolicy`` runs ``examples/receptionist_policy.py`` as a real process on
127.0.0.1; each test talks to it over HTTP or reads the error it raised.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from playground import policy_service
from playground.policy_service import ExamplePolicy, ExamplePolicyError

SESSION = {"call_id": "c1", "config": {}}


async def test_a_token_starting_with_a_dash_starts_the_service_and_guards_it() -> None:
    """One generated token in 64 starts with "-"; the service must still start, and ask for it."""
    token = "-dash-first-token-do-not-leak"
    async with ExamplePolicy(token=token) as service, httpx.AsyncClient() as http:
        allowed = await http.post(
            f"{service.url}/session", json=SESSION, headers={"Authorization": f"Bearer {token}"}
        )
        refused = await http.post(f"{service.url}/session", json=SESSION)
    assert allowed.status_code == 200
    assert allowed.json()["node_id"] == "greeting"
    assert refused.status_code == 401


async def test_a_service_that_exits_at_once_is_reported_with_its_reason_and_no_token(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A start that fails says what the service printed, with the token masked."""
    broken = tmp_path / "broken_policy.py"
    broken.write_text("import sys\nsys.exit('cannot bind: ' + sys.argv[-1])\n")
    monkeypatch.setattr(policy_service, "EXAMPLE", broken)
    token = "secret-token-do-not-leak-91ab"
    with pytest.raises(ExamplePolicyError) as raised:
        await ExamplePolicy(token=token).start()
    message = str(raised.value)
    assert "exited (1)" in message
    assert "cannot bind" in message
    assert token not in message
