"""From a ``/run`` request to a call plan: every decision about a call, made before it starts.

``plan_call`` checks the whole request and reports every problem at once
(``InvalidRequest``), then resolves what the pipeline builder needs: which
provider, model, voice and language each member uses, which key (the
request's, else the runner's environment) and which endpoint, the tools with
names every provider accepts, the turn-taking settings, and the conversation
history made valid for an LLM. The builder (``run.py``) takes the plan as
given and decides nothing of this again.

Nothing in a plan's ``repr`` shows a key, and no message here quotes a value
that could be one.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from loguru import logger

from teamrunner.config import Settings
from teamrunner.contract import Member, Message, RunRequest, Tool, VADConfig
from teamrunner.errors import InvalidRequest, Problem
from teamrunner.providers import LLM, STT, TTS, LLMSpec, STTSpec, TTSSpec, split_model
from teamrunner.providers.registry import Registry

# What OpenAI and Gemini accept as a function name.
FUNCTION_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

# ``{{ key }}`` placeholders in a member's prompt, filled from its ``parameter``.
PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\}\}")

MESSAGE_ROLES = {"system", "developer", "user", "assistant", "tool"}


@dataclass(frozen=True)
class ToolPlan:
    """A function the LLM may call.

    Attributes:
        name: The name the LLM sees (valid for every provider).
        wire_name: The name pipecat-manager knows it by, sent back on ``/tools``.
        description: What the LLM is told it does.
        parameters: Its JSON schema.
        run_llm: Whether the LLM runs again on the result, unless the model says otherwise.
    """

    name: str
    wire_name: str
    description: str
    parameters: dict[str, Any]
    run_llm: bool = False


@dataclass(frozen=True)
class TransitionPlan:
    """A function that hands the caller to another member."""

    name: str
    wire_name: str
    description: str
    next_member_id: str


@dataclass(frozen=True)
class TurnPlan:
    """How the end of the caller's turn is detected.

    Attributes:
        vad: Silero parameters; None fields keep pipecat's defaults.
        smart_turn: Whether the smart-turn model decides the end of a turn
            (otherwise a fixed silence after the VAD's stop does).
    """

    vad: VADConfig = field(default_factory=VADConfig)
    smart_turn: bool = False


@dataclass(frozen=True)
class MemberPlan:
    """One AI of the call: a team member, or the single AI of a single-AI call."""

    id: str
    name: str
    llm: LLMSpec
    stt: STTSpec | None
    tts: TTSSpec | None
    prompt: str | None
    tools: tuple[ToolPlan, ...]
    transitions: tuple[TransitionPlan, ...] = ()
    turn: TurnPlan | None = None
    # The fields pipecat-manager is told about in member-switched.
    engine_model: str = ""
    tts_type: str = ""
    tts_voice_id: str = ""
    stt_type: str = ""

    @property
    def label(self) -> str:
        return f"{self.name or self.id}"


@dataclass(frozen=True)
class CallPlan:
    """Everything needed to build one call's pipeline.

    Attributes:
        id: The pipecatcall id.
        members: The AIs of the call, by id (one for a single-AI call).
        start_member_id: Who answers first.
        is_team: Whether transitions between members are possible.
        hears: Whether the call has caller audio (an input socket and STT).
        speaks: Whether replies are spoken (TTS).
        turn: Turn-taking for the call (members may override it).
        messages: The conversation so far, valid for an LLM.
    """

    id: str
    members: dict[str, MemberPlan]
    start_member_id: str
    is_team: bool
    hears: bool
    speaks: bool
    turn: TurnPlan
    messages: list[dict[str, Any]]

    @property
    def start_member(self) -> MemberPlan:
        return self.members[self.start_member_id]


SINGLE_MEMBER_ID = "single"


def plan_call(request: RunRequest, settings: Settings) -> CallPlan:
    """Check ``request`` and plan the call.

    Raises:
        InvalidRequest: listing every problem found, each naming its field.
    """
    problems: list[Problem] = []
    hears = bool(request.stt_type)
    speaks = bool(request.tts_type)
    turn = TurnPlan(vad=request.vad_config or VADConfig(), smart_turn=request.smart_turn_enabled)
    if request.resolved_team is None:
        members = {SINGLE_MEMBER_ID: _plan_single(request, settings, problems)}
        start = SINGLE_MEMBER_ID
    else:
        members = _plan_team(request, settings, problems)
        start = request.resolved_team.start_member_id
    if problems:
        raise InvalidRequest(problems)
    return CallPlan(
        id=request.id,
        members=members,
        start_member_id=start,
        is_team=request.resolved_team is not None,
        hears=hears,
        speaks=speaks,
        turn=turn,
        messages=valid_history(request.llm_messages),
    )


def _plan_single(request: RunRequest, settings: Settings, problems: list[Problem]) -> MemberPlan:
    key = request.llm_key.get_secret_value() if request.llm_key else None
    llm = _llm_spec("llm_type", request.llm_type, key, "llm_key", settings, problems)
    stt = _stt_spec("stt_type", request.stt_type, request.stt_language, settings, problems)
    tts = _tts_spec(
        "tts_type",
        request.tts_type,
        request.tts_voice_id,
        request.tts_language,
        settings,
        problems,
    )
    _check_language("stt_language", request.stt_language, problems)
    _check_language("tts_language", request.tts_language, problems)
    tools = _plan_tools(request.tools)
    _check_function_names("tools", [(t.wire_name, t.name) for t in tools], problems)
    return MemberPlan(
        id=SINGLE_MEMBER_ID,
        name="single",
        llm=llm,
        stt=stt,
        tts=tts,
        prompt=None,
        tools=tuple(tools),
        engine_model=request.llm_type or "",
        tts_type=request.tts_type or "",
        tts_voice_id=request.tts_voice_id or "",
        stt_type=request.stt_type or "",
    )


def _plan_team(
    request: RunRequest, settings: Settings, problems: list[Problem]
) -> dict[str, MemberPlan]:
    team = request.resolved_team
    assert team is not None
    ids = [m.id for m in team.members]
    for member_id, count in Counter(ids).items():
        if count > 1:
            problems.append(
                Problem("resolved_team.members", f"member id {member_id!r} is used {count} times")
            )
    known = set(ids)
    if team.start_member_id not in known:
        problems.append(
            Problem(
                "resolved_team.start_member_id",
                f"{team.start_member_id!r} is not the id of any member "
                f"(members: {', '.join(repr(i) for i in ids)})",
            )
        )
    _check_language("stt_language", request.stt_language, problems)
    _check_language("tts_language", request.tts_language, problems)
    plans: dict[str, MemberPlan] = {}
    for index, member in enumerate(team.members):
        where = f"resolved_team.members[{index}]"
        is_start = member.id == team.start_member_id
        plan = _plan_member(where, member, request, is_start, known, settings, problems)
        plans.setdefault(member.id, plan)
    return plans


def _plan_member(
    where: str,
    member: Member,
    request: RunRequest,
    is_start: bool,
    known_ids: set[str],
    settings: Settings,
    problems: list[Problem],
) -> MemberPlan:
    ai = member.ai
    who = f"member {member.name or member.id!r}"
    local: list[Problem] = []
    key = ai.engine_key.get_secret_value() if ai.engine_key else None
    llm = _llm_spec(
        f"{where}.ai.engine_model", ai.engine_model, key, f"{where}.ai.engine_key", settings, local
    )
    stt_language = ai.stt_language or request.stt_language
    tts_language = ai.tts_language or request.tts_language
    _check_language(f"{where}.ai.stt_language", ai.stt_language, local)
    _check_language(f"{where}.ai.tts_language", ai.tts_language, local)
    stt_type, tts_type, voice = ai.stt_type, ai.tts_type, ai.tts_voice_id
    if is_start:
        # Go fills the top level from the start member; use it where the member is silent.
        stt_type = stt_type or request.stt_type
        tts_type = tts_type or request.tts_type
        voice = voice or request.tts_voice_id
    # A chat session (no top-level stt_type/tts_type) builds no STT/TTS at all,
    # whatever its members name.
    stt = tts = None
    if request.stt_type:
        stt = _stt_spec(f"{where}.ai.stt_type", stt_type, stt_language, settings, local)
    if request.tts_type:
        tts = _tts_spec(f"{where}.ai.tts_type", tts_type, voice, tts_language, settings, local)
    names_field = f"{where}.tools/transitions"
    tools = _plan_tools(member.tools)
    transitions = []
    for t_index, transition in enumerate(member.transitions):
        t_where = f"{where}.transitions[{t_index}]"
        if transition.next_member_id not in known_ids:
            local.append(
                Problem(
                    f"{t_where}.next_member_id",
                    f"{transition.next_member_id!r} is not the id of any member",
                )
            )
        transitions.append(
            TransitionPlan(
                name=function_name(transition.function_name),
                wire_name=transition.function_name,
                description=transition.description
                or f"Hand the caller to {transition.next_member_id}",
                next_member_id=transition.next_member_id,
            )
        )
    _check_function_names(
        names_field,
        [(t.wire_name, t.name) for t in tools] + [(t.wire_name, t.name) for t in transitions],
        local,
    )
    problems.extend(Problem(p.field, f"{who}: {p.message}") for p in local)
    turn = None
    if ai.vad_config is not None or ai.smart_turn_enabled is not None:
        turn = TurnPlan(
            vad=ai.vad_config or request.vad_config or VADConfig(),
            smart_turn=(
                ai.smart_turn_enabled
                if ai.smart_turn_enabled is not None
                else request.smart_turn_enabled
            ),
        )
    return MemberPlan(
        id=member.id,
        name=member.name or member.id,
        llm=llm,
        stt=stt,
        tts=tts,
        prompt=fill_placeholders(ai.init_prompt, ai.parameter) if ai.init_prompt else None,
        tools=tuple(tools),
        transitions=tuple(transitions),
        turn=turn,
        engine_model=ai.engine_model,
        tts_type=ai.tts_type or "",
        tts_voice_id=ai.tts_voice_id or "",
        stt_type=ai.stt_type or "",
    )


def _llm_spec(
    where: str,
    value: str | None,
    key: str | None,
    key_field: str,
    settings: Settings,
    problems: list[Problem],
) -> LLMSpec:
    placeholder = LLMSpec(provider="", model="")
    if not value:
        problems.append(Problem(where, "missing; expected <provider>.<model>, e.g. openai.gpt-4o"))
        return placeholder
    parts = split_model(value)
    if parts is None:
        problems.append(
            Problem(
                where,
                f"{value!r} is not <provider>.<model>; "
                f"accepted providers: {LLM.accepted()} (e.g. openai.gpt-4o)",
            )
        )
        return placeholder
    provider_name, model = parts
    provider = LLM.get(provider_name)
    if provider is None:
        problems.append(
            Problem(
                where,
                f"unsupported LLM provider {provider_name!r}; accepted: {LLM.accepted()}",
            )
        )
        return placeholder
    key = key or (settings.key(provider.key_variable) if provider.key_variable else None)
    if provider.needs_key and not key:
        problems.append(
            Problem(
                key_field,
                f"no key for {provider_name}: send it in the request "
                f"or set {provider.key_variable} on the runner",
            )
        )
    endpoint = settings.endpoint(provider.endpoint_variable) if provider.endpoint_variable else None
    return LLMSpec(provider=provider_name, model=model, key=key, endpoint=endpoint)


def _stt_spec(
    where: str,
    value: str | None,
    language: str | None,
    settings: Settings,
    problems: list[Problem],
) -> STTSpec | None:
    if not value:
        return None
    provider = _provider(where, value, STT, settings, problems)
    if provider is None:
        return None
    key, endpoint = provider
    spec = STTSpec(provider=value.lower(), language=language, key=key, endpoint=endpoint)
    return _checked(where, STT, spec, problems)


def _tts_spec(
    where: str,
    value: str | None,
    voice_id: str | None,
    language: str | None,
    settings: Settings,
    problems: list[Problem],
) -> TTSSpec | None:
    if not value:
        return None
    provider = _provider(where, value, TTS, settings, problems)
    if provider is None:
        return None
    key, endpoint = provider
    spec = TTSSpec(
        provider=value.lower(), voice_id=voice_id, language=language, key=key, endpoint=endpoint
    )
    return _checked(where, TTS, spec, problems)


def _checked(where: str, registry: Registry[Any, Any], spec: Any, problems: list[Problem]) -> Any:
    """The spec, after its provider's own check (a voice it lacks, a language it cannot hear)."""
    provider = registry.get(spec.provider)
    problem = provider.check(spec) if provider is not None and provider.check else None
    if problem:
        problems.append(Problem(where, problem))
        return None
    return spec


def _provider(
    where: str,
    value: str,
    registry: Registry[Any, Any],
    settings: Settings,
    problems: list[Problem],
) -> tuple[str | None, str | None] | None:
    """Key and endpoint for a speech provider, or None (with a problem) if unusable."""
    provider = registry.get(value.lower())
    if provider is None:
        problems.append(
            Problem(
                where,
                f"unsupported {registry.kind} provider {value!r}; accepted: {registry.accepted()}",
            )
        )
        return None
    key = settings.key(provider.key_variable) if provider.key_variable else None
    if provider.needs_key and not key:
        problems.append(Problem(where, f"{value} needs {provider.key_variable} set on the runner"))
        return None
    endpoint = settings.endpoint(provider.endpoint_variable) if provider.endpoint_variable else None
    return key, endpoint


def _check_language(where: str, code: str | None, problems: list[Problem]) -> None:
    if not code:
        return
    from pipecat.transcriptions.language import Language

    try:
        Language(code)
    except ValueError:
        problems.append(
            Problem(where, f"{code!r} is not a language code pipecat knows (e.g. en, en-US, de)")
        )


def _plan_tools(tools: list[Tool]) -> list[ToolPlan]:
    return [
        ToolPlan(
            name=function_name(tool.name),
            wire_name=tool.name,
            description=tool.description,
            parameters=tool.parameters,
            run_llm=tool.run_llm,
        )
        for tool in tools
    ]


def _check_function_names(
    where: str, names: list[tuple[str, str]], problems: list[Problem]
) -> None:
    """Refuse duplicate names, and distinct names that become the same once made valid."""
    by_valid: dict[str, list[str]] = {}
    for wire_name, valid in names:
        by_valid.setdefault(valid, []).append(wire_name)
    for valid, wire_names in by_valid.items():
        if len(wire_names) == 1:
            continue
        if len(set(wire_names)) == 1:
            problems.append(Problem(where, f"function name {wire_names[0]!r} is used twice"))
        else:
            listed = ", ".join(repr(n) for n in wire_names)
            problems.append(
                Problem(where, f"function names {listed} all become {valid!r}; rename one")
            )


def function_name(name: str) -> str:
    """``name`` made acceptable to OpenAI and Gemini (``^[a-zA-Z0-9_-]{1,64}$``).

    Each character outside the set becomes ``_`` and the result is cut at 64,
    so the same name always maps to the same function name.
    """
    if FUNCTION_NAME.match(name):
        return name
    return (re.sub(r"[^a-zA-Z0-9_-]", "_", name) or "_")[:64]


def fill_placeholders(prompt: str, parameters: dict[str, Any]) -> str:
    """Replace ``{{ key }}`` in ``prompt`` by the member's parameter ``key``.

    ``{{ a.b }}`` walks into nested objects. A placeholder naming no parameter
    is left as written, so a prompt's literal braces survive.
    """

    def value(match: re.Match[str]) -> str:
        current: Any = parameters
        for part in match.group(1).split("."):
            if not isinstance(current, dict) or part not in current:
                return match.group(0)
            current = current[part]
        return str(current)

    return PLACEHOLDER.sub(value, prompt)


def valid_history(messages: list[Message]) -> list[dict[str, Any]]:
    """``llm_messages`` as a context every provider accepts.

    Providers reject a tool result with no call before it, and an assistant
    tool call whose result never follows. So an assistant message keeps only
    the calls answered by the tool messages right after it, those answers
    follow it in call order, and everything else about tools is dropped.
    Messages with no role, an unknown role, or nothing to say are dropped too.
    """
    result: list[dict[str, Any]] = []
    dropped = 0
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        role = message.role
        if role not in MESSAGE_ROLES or role == "tool":
            dropped += 1
            continue
        if role == "assistant" and message.tool_calls:
            answers: dict[str, Message] = {}
            while index < len(messages) and messages[index].role == "tool":
                answer = messages[index]
                if answer.tool_call_id:
                    answers.setdefault(answer.tool_call_id, answer)
                index += 1
            calls = [c for c in message.tool_calls if c.id in answers]
            dropped += len(message.tool_calls) - len(calls)
            if not calls and not message.content:
                continue
            entry: dict[str, Any] = {"role": "assistant", "content": message.content or None}
            if calls:
                entry["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.function.name, "arguments": c.function.arguments},
                    }
                    for c in calls
                ]
            result.append(entry)
            for call in calls:
                answer = answers[call.id]
                result.append(
                    {"role": "tool", "tool_call_id": call.id, "content": _text(answer.content)}
                )
            continue
        if not message.content:
            dropped += 1
            continue
        entry = {"role": role, "content": message.content}
        if message.name:
            entry["name"] = message.name
        result.append(entry)
    if dropped:
        logger.info(f"llm_messages: dropped {dropped} message(s) or tool call(s) no LLM accepts")
    return result


def _text(content: str | list[Any] | None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
