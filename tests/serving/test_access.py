"""Only pipecat-manager drives calls: the API's token, and the Host names it answers to.

Each test talks to ``python main.py`` over a raw kept-alive connection, a
single runner and a pool's front alike (the front checks for its workers),
and reads what came back, and what the runner logged.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import pytest

from teamrunner.config import Settings
from teamrunner.errors import ConfigError
from teamrunner.serving.access import allowed_hosts

from conftest import runner_settings
from runner_process import RawConnection, RunnerProcess, http_request

TOKEN = "tok_3f9c1a7e5b2d4c6e8a0f1b3d5c7e9a1b"
AUTHORIZED = {"Authorization": f"Bearer {TOKEN}"}
RUN_BODY = json.dumps({"id": "call-1", "llm_type": "openai.gpt-4o"}).encode()


@pytest.fixture(scope="module", params=["single runner", "pool of 2"])
def runner(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunnerProcess]:
    environment = {
        "RUNNER_WORKERS": "1" if request.param == "single runner" else "2",
        "RUNNER_PRELOAD_MODELS": "",
        "RUNNER_API_TOKEN": TOKEN,
        "RUNNER_ALLOWED_HOSTS": "runner.example, pipecat-team-runner",
    }
    process = RunnerProcess(environment, tmp_path_factory.mktemp("runner")).start()
    yield process
    process.stop()


def post_run(headers: dict[str, str], body: bytes = RUN_BODY) -> bytes:
    return http_request("POST", "/run", body, {"Content-Type": "application/json", **headers})


async def test_without_the_token_run_stop_and_calls_are_401_while_the_probes_answer(
    runner: RunnerProcess,
) -> None:
    async with RawConnection("127.0.0.1", runner.port) as connection:
        refused = [
            await connection.request(post_run({})),
            await connection.request(http_request("POST", "/stop?id=call-1")),
            await connection.request(http_request("GET", "/calls")),
            # The token, but not as a Bearer token.
            await connection.request(http_request("GET", "/calls", b"", {"Authorization": TOKEN})),
        ]
        # The same connection, still served; the probes are open to all.
        probes = [
            await connection.request(http_request("GET", path))
            for path in ("/health", "/ready", "/metrics")
        ]

    for answer in refused:
        assert answer.status == 401, answer
        assert answer.headers["www-authenticate"].startswith("Bearer ")
        body = answer.json()
        assert body["status"] == "error" and "RUNNER_API_TOKEN" in body["error"]
        assert body["problems"] == [{"field": "Authorization", "message": "missing"}]
    assert [a.status for a in probes] == [200, 200, 200]


async def test_a_wrong_token_is_401_and_the_right_one_passes(runner: RunnerProcess) -> None:
    wrong = {"Authorization": f"Bearer {TOKEN[:-1]}x"}
    async with RawConnection("127.0.0.1", runner.port) as connection:
        refused = await connection.request(post_run(wrong))
        stopped = await connection.request(http_request("POST", "/stop?id=call-1", b"", AUTHORIZED))
        calls = await connection.request(
            http_request("GET", "/calls", headers={"Authorization": f"bearer  {TOKEN}"})
        )

    assert refused.status == 401
    assert 'error="invalid_token"' in refused.headers["www-authenticate"]
    assert refused.json()["problems"] == [
        {"field": "Authorization", "message": "not the runner's token"}
    ]
    assert TOKEN[:-1] not in refused.body.decode()
    assert stopped.status == 404  # past the token: no call with that id
    assert calls.status == 200 and calls.json() == {"calls": []}


async def test_the_token_never_appears_in_an_answer_or_the_log(runner: RunnerProcess) -> None:
    # A call whose id is the token (a token may look like an id) fails to start, since
    # there is no pipecat-manager; every line of the call carries its id.
    body = json.dumps({"id": TOKEN, "llm_type": "openai.gpt-4o", "llm_key": "sk-x" * 4})
    async with RawConnection("127.0.0.1", runner.port) as connection:
        failed = await connection.request(post_run(AUTHORIZED, body.encode()))
        await connection.request(post_run({"Authorization": f"Bearer {TOKEN}{TOKEN}"}))

    assert failed.status == 500, failed
    assert TOKEN not in failed.body.decode()
    log = runner.log
    assert "refused POST /run: 500" in log and "refused POST /run: 401" in log
    assert "[[redacted] single]" in log  # the call's lines, its id scrubbed
    assert TOKEN not in log


async def test_a_foreign_host_is_400_while_the_runners_own_names_are_served_on_any_port(
    runner: RunnerProcess,
) -> None:
    served_as = [
        "localhost",
        f"localhost:{runner.port}",
        "LocalHost:8000",
        "127.0.0.1",
        f"[::1]:{runner.port}",
        "[::1]",
        "runner.example",  # RUNNER_ALLOWED_HOSTS
        "pipecat-team-runner:8000",
    ]
    foreign = ["evil.example", f"evil.example:{runner.port}", "127.0.0.1.evil.example"]
    async with RawConnection("127.0.0.1", runner.port) as connection:
        refused = [
            await connection.request(http_request("GET", "/health", headers={"Host": host}))
            for host in foreign
        ]
        refused.append(await connection.request(post_run({**AUTHORIZED, "Host": "evil.example"})))
        # The same connection, still served.
        served = [
            await connection.request(http_request("GET", "/health", headers={"Host": host}))
            for host in served_as
        ]

    for answer in refused:
        assert answer.status == 400, answer
        body = answer.json()
        assert body["status"] == "error" and "RUNNER_ALLOWED_HOSTS" in body["error"]
        assert body["problems"] == [
            {"field": "Host", "message": "not a name this runner is served as"}
        ]
        assert b"evil" not in answer.body
    assert [a.status for a in served] == [200] * len(served_as)


def test_the_api_is_served_as_its_own_address_and_this_machines_when_on_every_address() -> None:
    assert allowed_hosts(runner_settings(host="10.1.2.3")) == {
        "localhost",
        "127.0.0.1",
        "::1",
        "10.1.2.3",
    }
    everywhere = allowed_hosts(runner_settings(host="0.0.0.0"))
    assert everywhere is not None
    # A pod's IP, a container's: what a kubelet's probe or a scraper names it by.
    own = {info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None)}
    assert {socket.gethostname().lower(), *own} <= everywhere
    assert "evil.example" not in everywhere
    assert allowed_hosts(runner_settings(allowed_hosts="a.example, *")) is None


def test_a_token_is_never_printed_and_a_short_one_is_refused_without_quoting_it() -> None:
    settings = Settings.from_env({"RUNNER_API_TOKEN": TOKEN})
    assert TOKEN not in repr(settings) and TOKEN in settings.secrets()

    with pytest.raises(ConfigError) as refused:
        Settings.from_env({"RUNNER_API_TOKEN": "hunter2-secret"})
    assert "RUNNER_API_TOKEN" in str(refused.value) and "at least 16" in str(refused.value)
    assert "hunter2" not in str(refused.value)
