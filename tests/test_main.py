"""The HTTP API: bad requests are refused naming the field; the schema and commands are true.

Every request here is refused before any call starts, so the runner's
pipecat-manager address leads nowhere and nothing else is needed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from playground.server import RunnerServer

from scenarios import assert_run_refused

SECRET = "sk-test-DO-NOT-LEAK-4f9a1c"

GOOD: dict[str, Any] = {
    "id": "2f0b6c1e-8d1d-4a7e-9a57-1f0c6a1d2b3c",
    "llm_type": "openai.gpt-4o",
    "llm_key": SECRET,
    "smart_turn_enabled": False,
}


def with_(**changes: Any) -> dict[str, Any]:
    body = dict(GOOD)
    for key, value in changes.items():
        if value is ...:
            body.pop(key, None)
        else:
            body[key] = value
    return body


CASES = [
    # (name, body, status, the field named, words the message must contain)
    ("id missing", with_(id=...), 422, "id", "Field required"),
    ("id with a slash", with_(id="a/b"), 422, "id", "pattern"),
    ("llm_type missing", with_(llm_type=...), 400, "llm_type", "<provider>.<model>"),
    ("llm_type without a model", with_(llm_type="gpt4"), 400, "llm_type", "openai"),
    ("unsupported LLM", with_(llm_type="claude.sonnet"), 400, "llm_type", "gemini, grok, openai"),
    ("unsupported STT", with_(stt_type="whisperx"), 400, "stt_type", "accepted: deepgram"),
    ("unsupported TTS", with_(tts_type="polly"), 400, "tts_type", "cartesia"),
    (
        "VAD confidence above 1",
        with_(vad_config={"confidence": 1.5}),
        422,
        "vad_config.confidence",
        "less than or equal to 1",
    ),
    (
        "VAD stop_secs negative",
        with_(vad_config={"stop_secs": -1}),
        422,
        "vad_config.stop_secs",
        "greater than or equal to 0",
    ),
    (
        "tool without a name",
        with_(tools=[{"description": "x"}]),
        422,
        "tools[0].name",
        "Field required",
    ),
    (
        "two tools with one name",
        with_(tools=[{"name": "a"}, {"name": "a"}]),
        400,
        "tools[1].name",
        "gives the LLM the same function name as tools[0].name",
    ),
    (
        "tool names that collide once made valid",
        with_(tools=[{"name": "send email"}, {"name": "send?email"}]),
        400,
        "tools[1].name",
        "the same function name as tools[0].name",
    ),
    ("llm_messages not a list", with_(llm_messages="hello"), 422, "llm_messages", "list"),
    (
        "smart_turn_enabled not a bool",
        with_(smart_turn_enabled="maybe"),
        422,
        "smart_turn_enabled",
        "boolean",
    ),
    ("no key anywhere", with_(llm_key=...), 400, "llm_key", "OPENAI_API_KEY"),
    (
        "unknown language",
        with_(stt_type="deepgram", stt_language="klingon"),
        400,
        "stt_language",
        "not a language code",
    ),
    ("deepgram without its key", with_(stt_type="deepgram"), 400, "stt_type", "DEEPGRAM_API_KEY"),
]


@pytest.mark.parametrize(
    ("body", "status", "field", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
async def test_malformed_request_is_refused_naming_the_field(
    bare_runner: RunnerServer, http: httpx.AsyncClient, body, status, field, words
) -> None:
    await assert_run_refused(bare_runner, http, body, (status, field, words), SECRET)


async def test_body_that_is_not_json_is_refused(
    bare_runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    response = await http.post(
        f"{bare_runner.url}/run", content=b"{not json", headers={"content-type": "application/json"}
    )

    assert response.status_code == 422
    assert "JSON" in response.json()["error"]


async def test_a_key_of_the_wrong_type_is_not_echoed(
    bare_runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    body = with_(llm_key={"value": SECRET})

    response = await http.post(f"{bare_runner.url}/run", json=body)

    assert response.status_code == 422
    assert [p["field"] for p in response.json()["problems"]] == ["llm_key"]
    assert SECRET not in response.text


async def test_every_problem_is_reported_at_once(
    bare_runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    body = with_(llm_type="claude.x", stt_type="nope", tts_type="nada")

    response = await http.post(f"{bare_runner.url}/run", json=body)

    assert response.status_code == 400
    fields = {p["field"] for p in response.json()["problems"]}
    assert fields == {"llm_type", "stt_type", "tts_type"}
    assert "3 problems" in response.json()["error"]


async def test_unknown_fields_are_ignored(
    bare_runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    body = with_(llm_type="claude.x", something_new={"a": 1})

    response = await http.post(f"{bare_runner.url}/run", json=body)

    assert response.status_code == 400
    assert [p["field"] for p in response.json()["problems"]] == ["llm_type"]


async def test_stop_of_an_unknown_call_is_404(
    bare_runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    response = await http.post(f"{bare_runner.url}/stop", params={"id": "nope"})

    assert response.status_code == 404
    assert "no call with that id is running" in response.json()["error"]


async def test_health_reports_the_number_of_calls_and_the_providers_it_serves(
    bare_runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    response = await http.get(f"{bare_runner.url}/health")

    assert response.status_code == 200
    health = response.json()
    load = health.pop("load")
    assert health == {
        "status": "ok",
        "sessions": 0,
        "speech_models_loaded": 0,
        # This test environment has every extra installed.
        "providers": {
            "llm": ["gemini", "grok", "openai"],
            "stt": ["deepgram", "whisper"],
            "tts": ["cartesia", "elevenlabs", "espeak", "piper"],
        },
    }
    # Nothing is pending; what the process measures (this test process's other work
    # included) is all of what it projects.
    assert load["pending"] == 0 and load["projected"] == load["measured"]
    assert load["admits"]["voice"]


async def test_openapi_documents_typed_answers_and_the_one_error_shape(
    bare_runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    spec = (await http.get(f"{bare_runner.url}/openapi.json")).json()

    def ref(route: str, method: str, status: str) -> str:
        content = spec["paths"][route][method]["responses"][status]["content"]
        return content["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]

    assert ref("/run", "post", "200") == "RunStarted"
    assert ref("/stop", "post", "200") == "Stopped"
    assert ref("/health", "get", "200") == "ProcessHealth"
    assert ref("/ready", "get", "200") == "ProcessReady"
    assert ref("/calls", "get", "200") == "Calls"
    for status in ("400", "409", "422", "500"):
        assert ref("/run", "post", status) == "ErrorAnswer"
    assert ref("/stop", "post", "404") == "ErrorAnswer"
    # FastAPI's own validation-error shape is not what the runner answers, so it is not described.
    assert "HTTPValidationError" not in spec["components"]["schemas"]


async def test_docs_page_is_off_since_it_would_load_assets_from_a_cdn(
    bare_runner: RunnerServer, http: httpx.AsyncClient
) -> None:
    assert (await http.get(f"{bare_runner.url}/docs")).status_code == 404


def test_main_help_prints_usage_and_exits_without_serving() -> None:
    result = subprocess.run(
        [sys.executable, "main.py", "--help"],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: python main.py")
    assert "RUNNER_" in result.stdout


def test_the_api_imports_no_call_stack() -> None:
    # A pool's front imports main.py and never runs a call: what main.py imports at
    # module level is on the path to the front's /health and to its workers' start.
    script = (
        "import sys, main; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'pipecat', 'numpy', 'openai'}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
