"""``plan_call``: check a whole ``/run`` request and turn it into a ``CallPlan``.

Every problem is collected before any is reported, so a team designer sees
all of them at once, each naming its field by its path in the request
(``resolved_team.members[1].ai.tts_type``).
"""

from __future__ import annotations

from collections.abc import Sequence

from teamrunner.config import Settings
from teamrunner.contract import Member, RunRequest, Transition, VADConfig
from teamrunner.errors import InvalidRequest, Problem
from teamrunner.plan import placeholders
from teamrunner.plan.functions import check_names, function_name, plan_tools
from teamrunner.plan.history import (
    greet_before_turn,
    pending_turn,
    split_system_prompt,
    valid_history,
)
from teamrunner.plan.model import (
    END_CALL_FUNCTION,
    SINGLE_MEMBER_ID,
    CallPlan,
    MemberPlan,
    TransitionPlan,
    TurnPlan,
)
from teamrunner.plan.remote_policy import plan_policy
from teamrunner.plan.specs import check_language, llm_spec, stt_spec, tts_spec
from teamrunner.plan.spoken import plan_end_call, plan_idle, words
from teamrunner.providers import STTSpec, TTSSpec


def plan_call(request: RunRequest, settings: Settings) -> CallPlan:
    """Check ``request`` and plan the call.

    Raises:
        InvalidRequest: listing every problem found, each naming its field.
    """
    problems: list[Problem] = []
    check_language("stt_language", request.stt_language, problems)
    check_language("tts_language", request.tts_language, problems)
    history = valid_history(request.llm_messages)
    if request.resolved_team is None:
        # A single AI is a team of one: its system messages are its member's prompt.
        prompt, messages = split_system_prompt(history)
        members = {SINGLE_MEMBER_ID: _plan_single(request, prompt, settings, problems)}
        start = SINGLE_MEMBER_ID
    else:
        # Member prompts come from the team; a system message in the history would
        # speak for whichever member wrote it to every member after.
        messages = [m for m in history if m.get("role") != "system"]
        members = _plan_team(request, settings, problems)
        start = request.resolved_team.start_member_id
    idle = plan_idle(request.idle, problems)
    policy = plan_policy(request.remote_policy, problems)
    if problems:
        raise InvalidRequest(problems)
    pending = pending_turn(messages)
    greeting = members[start].greeting
    if pending and greeting:
        messages = greet_before_turn(messages, greeting)
    return CallPlan(
        id=request.id,
        members=members,
        start_member_id=start,
        is_team=request.resolved_team is not None,
        hears=bool(request.stt_type),
        speaks=bool(request.tts_type),
        turn=TurnPlan(vad=request.vad_config or VADConfig(), smart_turn=request.smart_turn_enabled),
        messages=messages,
        team_id=request.resolved_team.id if request.resolved_team is not None else "",
        idle=idle,
        policy=policy,
        pending_turn=pending,
    )


def _plan_single(
    request: RunRequest, prompt: str | None, settings: Settings, problems: list[Problem]
) -> MemberPlan:
    key = request.llm_key.get_secret_value() if request.llm_key else None
    llm = llm_spec("llm_type", request.llm_type, key, "llm_key", settings, problems)
    stt = stt_spec("stt_type", request.stt_type, request.stt_language, settings, problems)
    tts = tts_spec(
        "tts_type",
        request.tts_type,
        request.tts_voice_id,
        request.tts_language,
        settings,
        problems,
    )
    tools = plan_tools(request.tools)
    end_call = plan_end_call("end_call", request.end_call, problems)
    check_names(
        [(f"tools[{i}].name", t.name) for i, t in enumerate(tools)]
        + ([("end_call", END_CALL_FUNCTION)] if end_call else []),
        problems,
    )
    return MemberPlan(
        id=SINGLE_MEMBER_ID,
        name="single",
        llm=llm,
        stt=stt,
        tts=tts,
        prompt=prompt,
        tools=tuple(tools),
        engine_model=request.llm_type or "",
        tts_type=request.tts_type or "",
        tts_voice_id=request.tts_voice_id or "",
        stt_type=request.stt_type or "",
        greeting=words("greeting", request.greeting, problems),
        end_call=end_call,
    )


def _plan_team(
    request: RunRequest, settings: Settings, problems: list[Problem]
) -> dict[str, MemberPlan]:
    team = request.resolved_team
    assert team is not None
    first_index: dict[str, int] = {}
    for index, member in enumerate(team.members):
        if member.id in first_index:
            problems.append(
                Problem(
                    f"resolved_team.members[{index}].id",
                    f"is the id of resolved_team.members[{first_index[member.id]}] too; "
                    "member ids must be unique",
                )
            )
        first_index.setdefault(member.id, index)
    if team.start_member_id not in first_index:
        problems.append(
            Problem(
                "resolved_team.start_member_id",
                "is not the id of any member of resolved_team.members",
            )
        )
    plans: dict[str, MemberPlan] = {}
    for index, member in enumerate(team.members):
        plan = _plan_member(
            f"resolved_team.members[{index}]",
            member,
            request,
            set(first_index),
            settings,
            problems,
        )
        plans.setdefault(member.id, plan)
    _check_end_call_tools(team.members, plans, problems)
    return plans


def _check_end_call_tools(
    members: Sequence[Member], plans: dict[str, MemberPlan], problems: list[Problem]
) -> None:
    """Refuse a Go tool named ``end_call`` in a team where a member offers ``end_call``.

    Go's tools are run by one handler registered on the team's LLM under each
    tool's name, which pipecat prefers to the one a member's node carries, so
    the tool would take every member's ``end_call`` over.
    """
    if not any(plan.end_call for plan in plans.values()):
        return
    for index, member in enumerate(members):
        plan = plans.get(member.id)
        if plan is None or plan.end_call is not None:
            continue  # its own end_call and tool collide, which check_names reports
        for number, tool in enumerate(plan.tools):
            if tool.name == END_CALL_FUNCTION:
                problems.append(
                    Problem(
                        f"resolved_team.members[{index}].tools[{number}].name",
                        "names the function end_call, which a member of this team offers "
                        "for ending the call; rename the tool",
                    )
                )


def _plan_member(
    where: str,
    member: Member,
    request: RunRequest,
    member_ids: set[str],
    settings: Settings,
    problems: list[Problem],
) -> MemberPlan:
    ai = member.ai
    key = ai.engine_key.get_secret_value() if ai.engine_key else None
    llm = llm_spec(
        f"{where}.ai.engine_model",
        ai.engine_model,
        key,
        f"{where}.ai.engine_key",
        settings,
        problems,
    )
    is_start = member.id == request.resolved_team.start_member_id  # type: ignore[union-attr]
    stt, tts = _plan_speech(where, member, request, is_start, settings, problems)
    tools = plan_tools(member.tools)
    transitions = _plan_transitions(where, member, member_ids, problems)
    # Go fills the top level from the start member, as for its voice above.
    greeting, greeting_at = (ai.greeting, f"{where}.ai.greeting")
    if greeting is None and is_start:
        greeting, greeting_at = request.greeting, "greeting"
    end_call_field = ai.end_call or (request.end_call if is_start else None)
    end_call_at = f"{where}.ai.end_call" if ai.end_call else "end_call"
    end_call = plan_end_call(end_call_at, end_call_field, problems, ai.parameter)
    check_names(
        [(f"{where}.tools[{i}].name", t.name) for i, t in enumerate(tools)]
        + [(f"{where}.transitions[{i}].function_name", t.name) for i, t in enumerate(transitions)]
        + ([(end_call_at, END_CALL_FUNCTION)] if end_call else []),
        problems,
    )
    return MemberPlan(
        id=member.id,
        name=member.name or member.id,
        llm=llm,
        stt=stt,
        tts=tts,
        prompt=(
            placeholders.fill(ai.init_prompt, ai.parameter)
            if ai.init_prompt
            else f"You are {member.name or member.id}."
        ),
        tools=tuple(tools),
        transitions=tuple(transitions),
        turn=_member_turn(member, request),
        engine_model=ai.engine_model,
        tts_type=ai.tts_type or "",
        tts_voice_id=ai.tts_voice_id or "",
        stt_type=ai.stt_type or "",
        greeting=words(greeting_at, greeting, problems, ai.parameter),
        end_call=end_call,
    )


def _plan_speech(
    where: str,
    member: Member,
    request: RunRequest,
    is_start: bool,
    settings: Settings,
    problems: list[Problem],
) -> tuple[STTSpec | None, TTSSpec | None]:
    """How a member hears and speaks: its own services, or the call's for the start member."""
    ai = member.ai
    check_language(f"{where}.ai.stt_language", ai.stt_language, problems)
    check_language(f"{where}.ai.tts_language", ai.tts_language, problems)
    # Go fills the top level from the start member; use it where the start member is silent.
    stt_type = ai.stt_type or (request.stt_type if is_start else None)
    tts_type = ai.tts_type or (request.tts_type if is_start else None)
    voice = ai.tts_voice_id or (request.tts_voice_id if is_start else None)
    # A chat session (no top-level stt_type/tts_type) builds no STT/TTS at all,
    # whatever its members name.
    stt = tts = None
    if request.stt_type:
        language = ai.stt_language or request.stt_language
        stt = stt_spec(f"{where}.ai.stt_type", stt_type, language, settings, problems)
    if request.tts_type:
        language = ai.tts_language or request.tts_language
        tts = tts_spec(f"{where}.ai.tts_type", tts_type, voice, language, settings, problems)
    return stt, tts


def _plan_transitions(
    where: str,
    member: Member,
    member_ids: set[str],
    problems: list[Problem],
) -> list[TransitionPlan]:
    transitions: Sequence[Transition] = member.transitions
    planned = []
    for index, transition in enumerate(transitions):
        if transition.next_member_id not in member_ids:
            problems.append(
                Problem(
                    f"{where}.transitions[{index}].next_member_id",
                    "is not the id of any member of resolved_team.members",
                )
            )
        planned.append(
            TransitionPlan(
                name=function_name(transition.function_name),
                wire_name=transition.function_name,
                description=transition.description
                or f"Hand the caller to {transition.next_member_id}",
                next_member_id=transition.next_member_id,
                handoff_message=words(
                    f"{where}.transitions[{index}].handoff_message",
                    transition.handoff_message,
                    problems,
                    member.ai.parameter,
                ),
                context=transition.context,
            )
        )
    return planned


def _member_turn(member: Member, request: RunRequest) -> TurnPlan | None:
    """The member's own turn-taking, or None when it keeps the call's."""
    ai = member.ai
    if ai.vad_config is None and ai.smart_turn_enabled is None:
        return None
    return TurnPlan(
        vad=ai.vad_config or request.vad_config or VADConfig(),
        smart_turn=(
            ai.smart_turn_enabled
            if ai.smart_turn_enabled is not None
            else request.smart_turn_enabled
        ),
    )
