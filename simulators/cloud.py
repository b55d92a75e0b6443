"""Every party a runner talks to, simulated at once: pipecat-manager and the providers.

``Cloud`` starts the simulators together and says how to point a runner at
them: ``endpoints()`` and ``keys()`` give the environment variables a runner
reads (``PIPECATCALL_ADDRESS``, ``OPENAI_BASE_URL``, ``DEEPGRAM_API_KEY``,
...), whether the runner is a process of its own (benchmarks) or served in
the same event loop (tests, the demo). The keys are stand-ins: the
simulators accept any.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Self

from simulators.cartesia import CartesiaSimulator
from simulators.deepgram import DeepgramSimulator
from simulators.elevenlabs import ElevenLabsSimulator
from simulators.manager import ManagerSimulator
from simulators.openai import ChatRequest, OpenAISimulator, Reply
from simulators.server import Simulator
from simulators.voices import VoiceBook

if TYPE_CHECKING:
    from simulators.tls import Certificates

# Stand-in keys: long enough that a runner treats them as secrets to scrub.
KEYS = {
    "OPENAI_API_KEY": "sk-openai-sim-7d1e0c5b9a",
    "XAI_API_KEY": "xai-grok-sim-3b8f21c6d4",
    "DEEPGRAM_API_KEY": "dg-sim-key-91c4e7a2b0",
    "CARTESIA_API_KEY": "cartesia-sim-key-5e2d8f1a",
    "ELEVENLABS_API_KEY": "xi-sim-key-0a6c3e9d7f",
}


@dataclass
class Cloud:
    """pipecat-manager, two OpenAI-compatible LLMs (openai, grok), Deepgram, Cartesia, ElevenLabs.

    Cartesia and ElevenLabs speak in tones of ``voices``, ``ms_per_char`` per character.
    With ``tls``, the providers speak TLS as the real ones do (``wss://``, ``https://``),
    with these certificates, whose CA the runner's environment trusts; pipecat-manager,
    a sidecar's neighbour on localhost, stays plain.
    """

    voices: VoiceBook = field(default_factory=VoiceBook)
    ms_per_char: float = 10.0
    responder: Callable[[ChatRequest], Reply] | None = None
    tls: Certificates | None = None
    manager: ManagerSimulator = field(init=False)
    openai: OpenAISimulator = field(init=False)
    grok: OpenAISimulator = field(init=False)
    deepgram: DeepgramSimulator = field(init=False)
    cartesia: CartesiaSimulator = field(init=False)
    elevenlabs: ElevenLabsSimulator = field(init=False)

    def __post_init__(self) -> None:
        self.manager = ManagerSimulator()
        self.openai = OpenAISimulator(name="openai", responder=self.responder)
        self.grok = OpenAISimulator(name="grok", responder=self.responder)
        self.deepgram = DeepgramSimulator()
        self.cartesia = CartesiaSimulator(voices=self.voices, ms_per_char=self.ms_per_char)
        self.elevenlabs = ElevenLabsSimulator(voices=self.voices, ms_per_char=self.ms_per_char)

    @property
    def all(self) -> list[Simulator]:
        return [self.manager, self.openai, self.grok, self.deepgram, self.cartesia, self.elevenlabs]

    def endpoints(self) -> dict[str, str]:
        """The runner's endpoint variables, pointing every provider at its simulator."""
        return {
            "OPENAI_BASE_URL": self.openai.base_url,
            "XAI_BASE_URL": self.grok.base_url,
            "DEEPGRAM_BASE_URL": self.deepgram.ws_url,
            "CARTESIA_BASE_URL": self.cartesia.ws_url,
            "ELEVENLABS_BASE_URL": self.elevenlabs.ws_url,
        }

    def keys(self) -> dict[str, str]:
        return dict(KEYS)

    def environment(self) -> dict[str, str]:
        """Everything a runner process needs in its environment to use this cloud."""
        trust = {} if self.tls is None else {"SSL_CERT_FILE": str(self.tls.ca)}
        return {
            "PIPECATCALL_ADDRESS": self.manager.address,
            **self.endpoints(),
            **self.keys(),
            **trust,
        }

    async def start(self) -> None:
        await self.manager.start()
        tls = None if self.tls is None else self.tls.server_context()
        for sim in self.all[1:]:
            await sim.start(tls=tls)

    async def stop(self) -> None:
        for sim in reversed(self.all):
            await sim.stop()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
