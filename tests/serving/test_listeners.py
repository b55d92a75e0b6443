"""The probes on a port of their own, so the API can stay on loopback while Prometheus scrapes.

The API listens on 127.0.0.1 and the probes on 127.0.0.2, another address
of this machine standing in for the pod's IP (Linux routes all of
127.0.0.0/8 to loopback), so a test can tell what answers where without
listening beyond loopback.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner_process import RawConnection, RunnerProcess, free_port, http_request

TOKEN = "tok_9b2e4d6f8a0c1e3b5d7f9a1c3e5b7d9f"
POD_IP = "127.0.0.2"


@pytest.fixture(scope="module", params=["single runner", "pool of 2"])
def runner(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunnerProcess]:
    environment = {
        "RUNNER_WORKERS": "1" if request.param == "single runner" else "2",
        "RUNNER_PRELOAD_MODELS": "",
        "RUNNER_API_TOKEN": TOKEN,
        "RUNNER_METRICS_HOST": POD_IP,
        "RUNNER_METRICS_PORT": str(free_port()),
    }
    process = RunnerProcess(environment, tmp_path_factory.mktemp("runner")).start()
    yield process
    process.stop()


def probe_port(runner: RunnerProcess) -> int:
    return int(runner.environment["RUNNER_METRICS_PORT"])


async def refused_connection(host: str, port: int) -> bool:
    try:
        _, writer = await asyncio.open_connection(host, port)
    except ConnectionRefusedError:
        return True
    writer.close()
    return False


async def test_the_probes_answer_on_their_own_port_and_address_with_no_host_or_token(
    runner: RunnerProcess,
) -> None:
    port = probe_port(runner)
    # As a kubelet or Prometheus sends them: the pod's IP as Host, no token.
    pod_ip = {"Host": f"10.1.2.3:{port}"}
    async with RawConnection(POD_IP, port) as connection:
        probes = {
            path: await connection.request(http_request("GET", path, headers=pod_ip))
            for path in ("/health", "/ready", "/metrics")
        }

    assert {path: a.status for path, a in probes.items()} == dict.fromkeys(probes, 200)
    assert b"runner_calls_active" in probes["/metrics"].body


async def test_the_probes_port_serves_nothing_else_and_the_api_is_not_on_its_address(
    runner: RunnerProcess,
) -> None:
    port = probe_port(runner)
    authorized = {"Authorization": f"Bearer {TOKEN}"}
    async with RawConnection(POD_IP, port) as connection:
        elsewhere = [
            await connection.request(http_request("POST", "/run", b"{}", authorized)),
            await connection.request(http_request("POST", "/stop?id=call-1", b"", authorized)),
            await connection.request(http_request("GET", "/calls", b"", authorized)),
            await connection.request(http_request("GET", "/openapi.json", b"", authorized)),
        ]

    for answer in elsewhere:
        assert answer.status == 404, answer
        assert answer.json()["error"].startswith(f"the port {port} (RUNNER_METRICS_PORT) serves")
    # Each listener on its own address alone.
    assert await refused_connection(POD_IP, runner.port)
    assert await refused_connection("127.0.0.1", port)
    # The API's listener still serves everything, the probes included, as before.
    async with RawConnection("127.0.0.1", runner.port) as connection:
        calls = await connection.request(http_request("GET", "/calls", b"", authorized))
        metrics = await connection.request(http_request("GET", "/metrics"))
    assert calls.status == 200 and metrics.status == 200


def test_a_probes_port_that_is_the_apis_stops_the_runner(tmp_path: Path) -> None:
    runner = RunnerProcess({}, tmp_path)
    runner.environment["RUNNER_METRICS_PORT"] = str(runner.port)
    try:
        with pytest.raises(RuntimeError, match="exited"):
            runner.start(timeout=30)
    finally:
        runner.stop()  # should it have started after all
    assert "RUNNER_METRICS_PORT is RUNNER_PORT" in runner.log
