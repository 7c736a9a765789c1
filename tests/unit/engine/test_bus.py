# SPDX-License-Identifier: MIT
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.bus import MessageBus


@dataclass(frozen=True)
class Base:
    n: int


@dataclass(frozen=True)
class Child(Base):
    pass


def test_publish_delivers_to_handlers_of_the_type_and_its_bases_in_order() -> None:
    bus = MessageBus()
    seen: list[tuple[str, int]] = []
    bus.subscribe(Base, lambda m: seen.append(("base", m.n)))
    bus.subscribe(Child, lambda m: seen.append(("child", m.n)))
    bus.publish(Child(1))
    bus.publish(Base(2))
    bus.publish("unrelated")
    assert seen == [("base", 1), ("child", 1), ("base", 2)]


def test_failing_handler_is_counted_and_does_not_stop_the_others() -> None:
    bus = MessageBus()
    seen: list[int] = []

    def broken(_m: Base) -> None:
        raise RuntimeError("boom")

    bus.subscribe(Base, broken)
    bus.subscribe(Base, lambda m: seen.append(m.n))
    bus.publish(Base(7))
    assert seen == [7]
    assert bus.handler_errors == 1


def test_unsubscribe_stops_delivery_and_unknown_handler_raises() -> None:
    bus = MessageBus()
    seen: list[int] = []
    handler = seen.append
    bus.subscribe(int, handler)
    bus.publish(1)
    bus.unsubscribe(int, handler)
    bus.publish(2)
    assert seen == [1]
    with pytest.raises(KeyError, match="not subscribed to int"):
        bus.unsubscribe(int, handler)


def test_a_muted_handler_is_skipped_and_keeps_its_place() -> None:
    bus = MessageBus()
    got: list[str] = []

    def first(m: int) -> None:
        got.append(f"first {m}")

    def second(m: int) -> None:
        got.append(f"second {m}")

    bus.subscribe(int, first)
    bus.subscribe(int, second)
    bus.set_muted(int, first, True)
    bus.publish(1)
    assert got == ["second 1"]
    bus.set_muted(int, second, True)
    assert not bus.wants(int)  # nobody would get one: a publisher may skip building it
    bus.set_muted(int, first, False)
    bus.set_muted(int, second, False)
    bus.publish(2)
    assert got == ["second 1", "first 2", "second 2"]  # the subscription order, as before
    with pytest.raises(KeyError, match="not subscribed to str"):
        bus.set_muted(str, first, True)


def _h1(m: object) -> None:
    pass


def _h2(m: object) -> None:
    pass


OPS = st.lists(
    st.tuples(
        st.sampled_from(["subscribe", "unsubscribe", "mute", "unmute"]),
        st.sampled_from([Base, Child]),
        st.sampled_from([_h1, _h2]),
    ),
    max_size=25,
)


@settings(max_examples=200, deadline=None)
@given(OPS, st.booleans())
def test_interest_is_always_what_wants_says(
    ops: list[tuple[str, type, object]], early: bool
) -> None:
    # Asked before or after the subscriptions; every change (including the ones refused)
    # leaves interest(t).wanted == wants(t) for a type and its subclass alike.
    bus = MessageBus()
    interests = [bus.interest(Base), bus.interest(Child)] if early else []
    for op, t, h in ops:
        try:
            if op == "subscribe":
                bus.subscribe(t, h)  # type: ignore[arg-type]
            elif op == "unsubscribe":
                bus.unsubscribe(t, h)  # type: ignore[arg-type]
            else:
                bus.set_muted(t, h, op == "mute")  # type: ignore[arg-type]
        except KeyError:
            pass  # not subscribed: nothing changed
        if not interests:
            interests = [bus.interest(Base), bus.interest(Child)]
        for interest in interests:
            assert interest.wanted is bus.wants(interest.msg_type)
    assert bus.interest(Base) is bus.interest(Base)  # one per type


def test_interest_follows_a_subscription_to_a_base_class() -> None:
    bus = MessageBus()
    child = bus.interest(Child)
    assert not child.wanted
    bus.subscribe(Base, _h1)
    assert child.wanted  # a Child would reach the Base handler
    bus.set_muted(Base, _h1, True)
    assert not child.wanted
    bus.set_muted(Base, _h1, False)
    bus.unsubscribe(Base, _h1)
    assert not child.wanted
    assert repr(child) == "Interest(Child, wanted=False)"
