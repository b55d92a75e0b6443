"""``ServicePool`` and ``ordered_services``: a service per distinct setting, start member first."""

from __future__ import annotations

from dataclasses import dataclass

from routing import ServicePool
from routing.router import ordered_services

from routing_doubles import Member


@dataclass(frozen=True)
class Spec:
    """A provider setting, as the plan would give it."""

    account: str
    model: str


def pool(**kwargs: object) -> tuple[ServicePool[Spec, Member], list[Spec]]:
    """A pool that builds a ``Member`` per spec, and the specs it was asked to build."""
    built: list[Spec] = []

    def build(spec: Spec) -> Member:
        built.append(spec)
        return Member(f"{spec.account}/{spec.model}")

    return ServicePool(build, **kwargs), built  # type: ignore[arg-type]


GREETER, BILLING, SUPPORT = Spec("openai", "gpt-4o"), Spec("grok", "grok-3"), Spec("openai", "mini")


def test_members_with_equal_specs_share_one_service_built_once() -> None:
    services, built = pool()

    by_member = services.for_members(
        {"greeter": GREETER, "billing": BILLING, "again": Spec("openai", "gpt-4o")}
    )

    assert by_member["greeter"] is by_member["again"]
    assert by_member["greeter"] is not by_member["billing"]
    assert built == [GREETER, BILLING]
    assert services.services == [by_member["greeter"], by_member["billing"]]


def test_the_key_decides_which_specs_share_a_service() -> None:
    services, built = pool(key=lambda spec: spec.account)

    by_member = services.for_members({"greeter": GREETER, "billing": BILLING, "support": SUPPORT})

    assert by_member["greeter"] is by_member["support"]
    assert built == [GREETER, BILLING]  # the first spec of an account builds its service


def test_a_member_without_a_spec_has_no_service() -> None:
    services, built = pool()

    assert services.for_members({"greeter": GREETER, "typist": None}) == {
        "greeter": services.get(GREETER),
        "typist": None,
    }
    assert built == [GREETER]


def test_users_are_the_members_a_service_serves() -> None:
    services, _ = pool(key=lambda spec: spec.account)
    specs = {"greeter": GREETER, "billing": BILLING, "support": SUPPORT, "typist": None}
    by_member = services.for_members(specs)

    assert services.users(by_member["greeter"], specs) == ["greeter", "support"]  # type: ignore[arg-type]
    assert services.users(by_member["billing"], specs) == ["billing"]  # type: ignore[arg-type]
    assert services.users(Member("elsewhere"), specs) == []


def test_services_are_ordered_start_member_first_each_once() -> None:
    a, b = Member("A"), Member("B")

    assert ordered_services({"x": a, "y": b, "z": a, "start": b}, "start") == [b, a]
    # A start member without a service of this kind: the first member's is used.
    assert ordered_services({"x": a, "start": None, "y": b}, "start") == [a, b]
