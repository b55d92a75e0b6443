"""What a request may cost the runner: kept-alive connections, slow and huge requests, odd ids.

Each test talks to ``python main.py`` over raw sockets or httpx, the way a
pooled Go client or a misbehaving one would, and reads what came back.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from runner_process import RunnerProcess

LIMITS = {
    "RUNNER_HEADER_TIMEOUT_SECS": "0.5",
    "RUNNER_BODY_TIMEOUT_SECS": "0.5",
    "RUNNER_MAX_BODY_BYTES": str(4 * 1024 * 1024),
}


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunnerProcess]:
    process = RunnerProcess(LIMITS, tmp_path_factory.mktemp("runner")).start()
    yield process
    process.stop()


async def exchange(writer: asyncio.StreamWriter, reader: asyncio.StreamReader, raw: bytes) -> str:
    """Send one raw request and read one whole response (headers and body)."""
    writer.write(raw)
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    length = next(
        int(line.split(b":")[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    body = await asyncio.wait_for(reader.readexactly(length), 10)
    return (head + body).decode()


def get(path: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()


async def test_an_idle_kept_alive_connection_outlives_uvicorns_old_five_seconds(
    runner: RunnerProcess,
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", runner.port)
    try:
        assert " 200 " in (await exchange(writer, reader, get("/health"))).split("\r\n")[0]
        await asyncio.sleep(6.0)  # Go's pool keeps a connection idle for up to 90 s
        second = await exchange(
            writer,
            reader,
            b"POST /stop?id=gone HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n",
        )
    finally:
        writer.close()
    assert second.startswith("HTTP/1.1 404"), second
    assert '"status":"error"' in second


async def test_clients_that_send_headers_slowly_are_answered_408_and_closed(
    runner: RunnerProcess,
) -> None:
    clients = [await asyncio.open_connection("127.0.0.1", runner.port) for _ in range(50)]
    for _, writer in clients:
        writer.write(b"POST /run HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and then nothing more
        await writer.drain()
    # Meanwhile a well-behaved client is served.
    async with httpx.AsyncClient() as http:
        assert (await http.get(f"{runner.url}/health")).status_code == 200
    answers = []
    for reader, writer in clients:
        answers.append((await asyncio.wait_for(reader.read(), 5)).decode())
        writer.close()
    assert all(a.startswith("HTTP/1.1 408") for a in answers), answers[0]
    assert json.loads(answers[0].split("\r\n\r\n", 1)[1])["status"] == "error"


async def test_a_body_that_trickles_in_is_answered_408(runner: RunnerProcess) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", runner.port)
    writer.write(
        b"POST /run HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b'Content-Length: 100\r\n\r\n{"id": '
    )
    await writer.drain()
    answer = (await asyncio.wait_for(reader.read(), 5)).decode()
    writer.close()
    assert answer.startswith("HTTP/1.1 408"), answer
    assert "did not arrive within 0.5s" in answer


async def test_a_body_past_the_limit_is_refused_413_before_it_is_read(
    runner: RunnerProcess,
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", runner.port)
    started = time.monotonic()
    writer.write(
        b"POST /run HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: 52428800\r\n\r\n"
    )
    await writer.drain()
    answer = (await asyncio.wait_for(reader.read(), 5)).decode()
    writer.close()
    assert answer.startswith("HTTP/1.1 413"), answer
    assert "RUNNER_MAX_BODY_BYTES" in answer
    # Refused on the declared length: no 50 MB were waited for.
    assert time.monotonic() - started < 5


async def test_a_chunked_body_past_the_limit_is_refused_413(runner: RunnerProcess) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", runner.port)
    received = bytearray()

    async def read_answer() -> None:
        # Read while still sending: the runner answers as soon as the limit is passed,
        # then drops the connection with the rest of the body unread.
        try:
            while chunk := await reader.read(65536):
                received.extend(chunk)
        except ConnectionError:
            pass

    answer = asyncio.ensure_future(read_answer())
    writer.write(
        b"POST /run HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
    )
    chunk = b"x" * 65536
    try:
        for _ in range(128):  # 8 MiB, past the 4 MiB limit
            if received:
                break
            writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            await writer.drain()
    except ConnectionError:
        pass
    await asyncio.wait_for(answer, 5)
    writer.close()
    text = received.decode(errors="replace")
    assert text.startswith("HTTP/1.1 413"), text[:200]
    assert '"status":"error"' in text


async def test_a_client_still_sending_a_refused_body_reads_the_413_and_is_not_reset(
    runner: RunnerProcess,
) -> None:
    # Go's client writes a body while the answer comes back. Closing with its bytes
    # unread makes the kernel reset the connection, and a reset can beat the answer.
    reader, writer = await asyncio.open_connection("127.0.0.1", runner.port)
    writer.write(
        b"POST /run HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: 52428800\r\n\r\n"
    )
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    assert head.startswith(b"HTTP/1.1 413"), head

    # The body goes on after the answer: a megabyte, each write drained.
    chunk = b"x" * 65536
    for _ in range(16):
        writer.write(chunk)
        await writer.drain()
        await asyncio.sleep(0.01)
    rest = await asyncio.wait_for(reader.read(), 5)  # the answer's body, then the end
    writer.close()

    assert b"RUNNER_MAX_BODY_BYTES" in rest
    assert reader.at_eof()


def member(index: int) -> dict[str, object]:
    """A member as big as a real one: a long prompt, five tools with schemas, two transitions."""
    tool = {
        "name": "tool",
        "description": "Look something up in the customer's records. " * 4,
        "parameters": {
            "type": "object",
            "properties": {
                f"field_{i}": {"type": "string", "description": "x" * 40} for i in range(4)
            },
        },
    }
    return {
        "id": f"member-{index}",
        "name": f"Member {index}",
        "ai": {
            "engine_model": "openai.gpt-4o",
            "engine_key": "sk-not-a-real-key-but-long-enough",
            "init_prompt": "You help callers. " * 100,
        },
        "tools": [{**tool, "name": f"tool_{i}"} for i in range(5)],
        "transitions": [
            {
                "function_name": f"to_{j}",
                "description": "Hand over.",
                "next_member_id": f"member-{j}",
            }
            for j in ((index + 1) % 500, (index + 2) % 500)
        ],
    }


async def test_a_500_member_team_fits_under_the_default_body_limit(runner: RunnerProcess) -> None:
    body = {
        "id": "big-team",
        "llm_type": "openai.gpt-4o",
        "llm_key": "sk-not-real-but-long-enough",
        "resolved_team": {
            "start_member_id": "member-0",
            "members": [member(i) for i in range(500)],
        },
    }
    size = len(json.dumps(body))
    assert size > 2_000_000  # a realistic 500-member team is a few megabytes

    async with httpx.AsyncClient(timeout=30) as http:
        response = await http.post(f"{runner.url}/run", json=body)

    # Read and planned whole; the call then fails to start only because the runner has no
    # pipecat-manager to dial.
    assert response.status_code == 500, response.text[:300]
    assert response.json()["problems"][0]["field"] == "output socket to pipecat-manager"


@pytest.mark.parametrize("bad_id", [".", "..", "a.b", "-leading-dash", "a" * 129, "white space"])
async def test_ids_that_are_not_one_plain_path_segment_are_refused_422(
    runner: RunnerProcess, bad_id: str
) -> None:
    async with httpx.AsyncClient() as http:
        started = await http.post(f"{runner.url}/run", json={"id": bad_id, "llm_type": "openai.x"})
        stopped = await http.post(f"{runner.url}/stop", params={"id": bad_id})
    for response in (started, stopped):
        assert response.status_code == 422, response.text
        answer = response.json()
        assert answer["status"] == "error"
        assert [p["field"] for p in answer["problems"]] == ["id"]


async def test_a_body_nested_too_deep_to_parse_gets_the_runners_error_shape(
    runner: RunnerProcess,
) -> None:
    deep = "[" * 5000 + "]" * 5000
    async with httpx.AsyncClient() as http:
        response = await http.post(
            f"{runner.url}/run", content=deep, headers={"content-type": "application/json"}
        )
    assert response.status_code in (400, 422), response.text
    answer = response.json()
    assert answer["status"] == "error" and "detail" not in answer


async def test_unknown_routes_and_methods_get_the_runners_error_shape(
    runner: RunnerProcess,
) -> None:
    async with httpx.AsyncClient() as http:
        missing = await http.get(f"{runner.url}/nowhere")
        wrong_method = await http.get(f"{runner.url}/run")
    assert missing.status_code == 404 and missing.json()["status"] == "error"
    assert wrong_method.status_code == 405 and wrong_method.json()["status"] == "error"


async def test_each_refused_request_leaves_one_log_line_with_its_status(
    runner: RunnerProcess, tmp_path: Path
) -> None:
    async with httpx.AsyncClient() as http:
        await http.post(f"{runner.url}/run", json={"id": "refused-1", "llm_type": "nope.model"})
    await runner.wait_log("refused POST /run: 400")
    lines = [line for line in runner.log.splitlines() if "refused POST /run: 400" in line]
    assert len(lines) >= 1
    assert "nope" not in lines[-1]  # the reason names the field, never the value


async def test_a_request_that_is_not_http_gets_400_in_the_error_shape_and_is_closed(
    runner: RunnerProcess,
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", runner.port)
    writer.write(b"POST /run HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: x\r\n\r\n")
    await writer.drain()
    answer = (await asyncio.wait_for(reader.read(), 5)).decode()
    writer.close()
    head, body = answer.split("\r\n\r\n", 1)
    assert head.startswith("HTTP/1.1 400"), answer
    assert "connection: close" in head.lower()
    assert json.loads(body) == {
        "status": "error",
        "error": "the request is not HTTP/1.1 the runner can read",
    }


async def test_a_body_sent_a_byte_at_a_time_is_cut_off_at_its_deadline_with_408(
    runner: RunnerProcess,
) -> None:
    # Each byte comes well within 0.5 s of the last: only a deadline for the whole body
    # (RUNNER_BODY_TIMEOUT_SECS=0.5) ends it.
    body = b'{"id": "trickled", "llm_type": "openai.gpt-4o"}'
    reader, writer = await asyncio.open_connection("127.0.0.1", runner.port)
    writer.write(
        b"POST /run HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body)
    )
    await writer.drain()
    started = time.monotonic()
    answer = asyncio.ensure_future(reader.read())
    for byte in body:
        if answer.done():
            break
        writer.write(bytes([byte]))
        await writer.drain()
        await asyncio.wait({answer}, timeout=0.2)
    cut_after = time.monotonic() - started
    text = (await asyncio.wait_for(answer, 5)).decode()
    writer.close()
    assert text.startswith("HTTP/1.1 408"), text
    assert "connection: close" in text.lower()
    assert json.loads(text.split("\r\n\r\n", 1)[1])["status"] == "error"
    # Cut at its deadline, long before its last byte (about 9 s away) was due; the
    # margin is for a machine busy with other tests.
    assert 0.5 <= cut_after < 4.0, cut_after
