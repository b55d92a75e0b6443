"""Bodies the JSON parser refuses: a 422 naming the body, and the connection goes on.

Go's client pools kept-alive connections and sends its next request on the
one that was just answered, so a bad body must cost nothing but its own
answer. Each test sends one on a raw connection to ``python main.py``, a
single runner and a pool's front alike, then a good request on the same
connection.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from runner_process import RawConnection, RunnerProcess, http_request

# Inside every bad body, where an answer or a log line quoting the body would show it.
MARKER = "quote-me-not-7c1e"

BAD_BODIES = {
    "nested 5000 deep": b"[" * 5000 + b"]" * 5000,
    "an id beside a value nested 5000 deep": (
        b'{"id": "call-1", "llm_type": "openai.gpt-4o", "parameter": '
        + b"[" * 5000
        + b"]" * 5000
        + b"}"
    ),
    "not UTF-8": (
        f'{{"id": "call-1", "llm_type": "openai.gpt-4o", "greeting": "{MARKER} caf'.encode()
        + b'\xe9"}'
    ),
    "a number 5000 digits long": (
        f'{{"id": "call-1", "llm_type": "openai.gpt-4o", "greeting": "{MARKER}", '.encode()
        + b'"idle": {"timeout_secs": '
        + b"9" * 5000
        + b"}}"
    ),
    "cut short": f'{{"id": "call-1", "greeting": "{MARKER}", "llm_'.encode(),
}


@pytest.fixture(scope="module", params=["single runner", "pool of 2"])
def runner(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunnerProcess]:
    workers = "1" if request.param == "single runner" else "2"
    environment = {"RUNNER_WORKERS": workers, "RUNNER_PRELOAD_MODELS": ""}
    process = RunnerProcess(environment, tmp_path_factory.mktemp("runner")).start()
    yield process
    process.stop()


def post_run(body: bytes) -> bytes:
    return http_request("POST", "/run", body, {"Content-Type": "application/json"})


@pytest.mark.parametrize("body", BAD_BODIES.values(), ids=BAD_BODIES.keys())
async def test_a_body_the_parser_refuses_is_a_422_and_the_connection_serves_the_next_request(
    runner: RunnerProcess, body: bytes
) -> None:
    async with RawConnection("127.0.0.1", runner.port) as connection:
        refused = await connection.request(post_run(body))
        next_one = await connection.request(http_request("POST", "/stop?id=unknown"))
        health = await connection.request(http_request("GET", "/health"))

    assert refused.status == 422, refused
    answer = refused.json()
    assert answer["status"] == "error"
    assert [p["field"] for p in answer["problems"]] == ["body"]
    assert "not JSON the runner can read" in answer["problems"][0]["message"]
    assert MARKER.encode() not in refused.body
    assert "connection" not in refused.headers  # kept alive
    assert next_one.status == 404 and next_one.json()["status"] == "error"
    assert health.status == 200


async def test_bad_bodies_leave_one_line_each_and_no_traceback_in_the_log(
    runner: RunnerProcess,
) -> None:
    async with RawConnection("127.0.0.1", runner.port) as connection:
        for body in BAD_BODIES.values():
            assert (await connection.request(post_run(body))).status == 422

    log = runner.log
    assert "Traceback" not in log
    assert MARKER not in log
    assert log.count("refused POST /run: 422") >= len(BAD_BODIES)
