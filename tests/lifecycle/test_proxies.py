"""A call's sockets ask for the proxy settings read once, and still go through the proxy they name.

``websockets`` asks urllib about proxies on every connect, and urllib walks the
whole environment to answer; after ``read_once`` it answers from the settings
the process started with.
"""

from __future__ import annotations

import urllib.request

import pytest
from websockets.uri import get_proxy, parse_uri

from teamrunner.lifecycle import proxies

PROXY = "http://proxy.example:3128"


@pytest.fixture
def restored_urllib(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """urllib's proxy functions put back after the test, as the process had them."""
    for name in ("getproxies", "getproxies_environment"):
        monkeypatch.setattr(urllib.request, name, getattr(urllib.request, name))
    return monkeypatch


def test_a_websocket_goes_through_the_proxy_the_environment_named_at_start(
    restored_urllib: pytest.MonkeyPatch,
) -> None:
    restored_urllib.setenv("HTTPS_PROXY", PROXY)
    restored_urllib.setenv("NO_PROXY", "127.0.0.1,localhost")
    assert proxies.read_once()

    assert get_proxy(parse_uri("wss://api.deepgram.com/v1/listen")) == PROXY
    assert get_proxy(parse_uri("ws://127.0.0.1:8001/call/ws")) is None


def test_the_proxy_settings_are_not_read_again_once_read(
    restored_urllib: pytest.MonkeyPatch,
) -> None:
    restored_urllib.delenv("HTTPS_PROXY", raising=False)
    restored_urllib.delenv("https_proxy", raising=False)
    assert proxies.read_once()

    restored_urllib.setenv("HTTPS_PROXY", PROXY)
    assert get_proxy(parse_uri("wss://api.deepgram.com/v1/listen")) is None
    assert urllib.request.getproxies().get("https") is None
