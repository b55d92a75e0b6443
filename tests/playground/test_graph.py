"""The member graph: one node per member entry, edges where the runner would go."""

from __future__ import annotations

from pathlib import Path

import yaml

from playground.checks import check
from playground.graph import mermaid
from playground.teamfile import load


def member(member_id: str, name: str, *transitions: tuple[str, str]) -> dict:
    return {
        "id": member_id,
        "name": name,
        "ai": {"engine_model": "openai.gpt-4o"},
        "transitions": [{"function_name": fn, "next_member_id": to} for fn, to in transitions],
    }


def nodes(graph: str) -> dict[str, str]:
    """Each node's id and label, from lines like ``m0["label"]``."""
    found = {}
    for line in graph.splitlines():
        head, quote, rest = line.strip().partition('["')
        if quote and " " not in head:
            found[head] = rest.removesuffix('"]')
    return found


def test_duplicate_member_ids_are_drawn_as_two_nodes_and_the_second_is_an_error(
    tmp_path: Path,
) -> None:
    path = tmp_path / "team.yaml"
    team = {
        "start_member_id": "front",
        "members": [
            member("front", "Front", ("transfer_to_sales", "sales")),
            member("sales", "Sales East", ("transfer_to_front", "front")),
            member("sales", "Sales West", ("back_to_front", "front")),
        ],
    }
    path.write_text(yaml.safe_dump({"team": team}, sort_keys=False))
    loaded = load(path)

    graph = mermaid(loaded).splitlines()

    labels = nodes("\n".join(graph))
    assert list(labels) == ["m0", "m1", "m2"]
    assert labels["m1"].startswith("Sales East<br/>")
    assert labels["m2"].startswith("⚠ duplicate id 'sales', as m1: refused<br/>Sales West<br/>")
    # The runner takes a transition to the first member of an id.
    assert "    start(( )) --> m0" in graph
    assert "    m0 -- transfer_to_sales --> m1" in graph
    assert "    m1 -- transfer_to_front --> m0" in graph
    assert "    m2 -- back_to_front --> m0" in graph
    assert "    class m2 error" in graph
    assert any(line.strip().startswith("classDef error ") for line in graph)
    # And check says why it is an error.
    assert any(
        "team.members[2] (sales).id: is the id of team.members[1] too" in e
        for e in check(loaded).errors
    )


def test_labels_cannot_break_out_of_their_node(tmp_path: Path) -> None:
    path = tmp_path / "team.yaml"
    team = {
        "start_member_id": "front",
        "members": [member("front", 'The "best" <b>desk</b> | east')],
    }
    path.write_text(yaml.safe_dump({"team": team}))

    labels = nodes(mermaid(load(path)))

    assert labels["m0"].startswith("The #quot;best#quot; #lt;b#gt;desk#lt;/b#gt; #124; east<br/>")


def test_a_team_without_errors_has_no_error_style(tmp_path: Path) -> None:
    path = tmp_path / "team.yaml"
    team = {
        "start_member_id": "front",
        "members": [
            member("front", "Front", ("transfer_to_sales", "sales")),
            member("sales", "Sales", ("transfer_to_front", "front")),
        ],
    }
    path.write_text(yaml.safe_dump({"team": team}))

    graph = mermaid(load(path))

    assert "error" not in graph
    assert list(nodes(graph)) == ["m0", "m1"]
