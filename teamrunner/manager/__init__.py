"""The wire to pipecat-manager: its two websockets, the RTVI events it reads, tools, notices."""
