"""Where a call's endpoints at pipecat-manager are (docs/contract.md sections 3-5).

Kept apart from the transports, so code that only names an address (an error
message, a log line) imports no pipecat.
"""


def socket_url(base_ws_url: str, call_id: str, direction: str) -> str:
    """``ws://{address}/{id}/ws?direction=input|output``."""
    return f"{base_ws_url}/{call_id}/ws?direction={direction}"
