"""The process's proxy settings, read from its environment once.

Every websocket a call opens (to pipecat-manager, Deepgram, Cartesia,
ElevenLabs) asks urllib twice whether and how to go through a proxy
(``websockets``' ``get_proxy``: ``proxy_bypass``, then ``getproxies``), and
urllib answers each time by walking the whole environment for ``*_proxy``
variables. In a Kubernetes pod that environment holds, beside the runner's
own settings, seven variables for every Service in the namespace (service
links, on by default): with 70 Services a walk costs about 0.9 ms, some 20
of them a ten-member team's call start, all on the event loop, where no other
call's audio moves meanwhile. Proxy variables do not change while the
process runs, so ``read_once`` reads them once and urllib answers from that.
Proxies are honoured as before (``HTTPS_PROXY``, ``NO_PROXY`` and the rest).
"""

from __future__ import annotations

import urllib.request

# urllib's own reader, kept so that reading again (a test, a re-exec'd worker) reads afresh.
_read_environment = urllib.request.getproxies_environment
# Linux and the other POSIX systems but macOS: urllib reads proxies from the environment alone.
_environment_only = urllib.request.getproxies is urllib.request.getproxies_environment


def read_once() -> bool:
    """Make urllib answer proxy questions from the environment as it is now.

    Returns whether it did: only where urllib reads proxies from the
    environment alone (Linux and the other POSIX systems but macOS, whose
    system settings urllib also reads, and Windows, whose registry it does).
    """
    if not _environment_only:
        return False
    proxies = _read_environment()
    request = urllib.request

    def getproxies() -> dict[str, str]:
        return dict(proxies)

    # proxy_bypass (proxy_bypass_environment here) looks getproxies_environment up by name.
    request.getproxies_environment = getproxies
    request.getproxies = getproxies
    return True
