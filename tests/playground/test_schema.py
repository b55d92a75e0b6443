"""Unknown keys: found by walking raw data beside the models' declared fields."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, Field

from playground.schema import unknown_keys
from playground.teamfile import TeamFile
from teamrunner.contract import Member, ResolvedAI, Tool, Transition, VADConfig


class Leaf(BaseModel):
    size: int = 0
    free: dict[str, Any] = Field(default_factory=dict)


class Branch(BaseModel):
    leaf: Leaf | None = None
    leaves: Annotated[list[Leaf], BeforeValidator(lambda v: v or [])] = Field(default_factory=list)
    by_name: dict[str, Leaf] = Field(default_factory=dict)


def test_unknown_keys_are_found_through_nested_models_lists_dicts_and_optionals() -> None:
    data = {
        "leaf": {"size": 1, "colour": "green"},
        "leaves": [{"size": 2}, {"sise": 3}],
        "by_name": {"oak": {"size": 4, "bark": True}},
        "root": 1,
    }

    found = unknown_keys(Branch, data)

    assert [key.path for key in found] == [
        ("leaf", "colour"),
        ("leaves", 1, "sise"),
        ("by_name", "oak", "bark"),
        ("root",),
    ]
    assert found[1].accepted == ("size", "free")
    assert "did you mean 'size'?" in found[1].message
    assert "did you mean" not in found[0].message


def test_free_form_values_and_data_of_the_wrong_shape_are_not_walked() -> None:
    # ``free`` is dict[str, Any]: anything goes in it. A list where a model belongs
    # is pydantic's to refuse, not a key to report.
    data = {"leaf": {"free": {"anything": {"at": "all"}}}, "by_name": ["not", "a", "dict"]}

    assert unknown_keys(Branch, data) == []


def test_every_field_the_contract_declares_is_a_known_key_of_a_team_file() -> None:
    def declared(model: type[BaseModel], **nested: Any) -> dict[str, Any]:
        return {**dict.fromkeys(model.model_fields), **nested}

    member = declared(
        Member,
        ai=declared(ResolvedAI, vad_config=declared(VADConfig)),
        tools=[declared(Tool)],
        transitions=[declared(Transition)],
    )
    data = {"team": {"start_member_id": "front", "members": [member]}}

    assert unknown_keys(TeamFile, data) == []
    # And the walk did reach down there: one more key at the bottom is found.
    member["ai"]["vad_config"]["loudness"] = 1
    assert [key.path for key in unknown_keys(TeamFile, data)] == [
        ("team", "members", 0, "ai", "vad_config", "loudness")
    ]
