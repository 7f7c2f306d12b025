"""The official ACP Python SDK's client side (PyPI `agent-client-protocol`) driving `tokamak acp`.

Run by tests/it/acp.rs: `python tests/acp_sdk_client.py TOKAMAK ROOT GOAL`. The SDK checks every
message Tokamak sends against its own models (pydantic), so an update, a request or an answer
that breaks the protocol fails here. It runs the goal (allowing each change once, writing the
files as an editor saves them), lists the sessions, loads this one (its updates replayed),
sets the model picker, switches the approval picker mid-session, asks a follow-up question
with an image, and prints what it saw as one JSON object on stdout.
"""

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import acp
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    FileSystemCapabilities,
    ReadTextFileResponse,
    RequestPermissionResponse,
    WriteTextFileResponse,
)


# a 1×1 red PNG
RED_PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="


class Editor:
    """The client: it answers Tokamak's requests and records the updates."""

    def __init__(self) -> None:
        self.updates: list[dict[str, Any]] = []
        self.permissions: list[dict[str, Any]] = []
        self.writes: list[str] = []

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **_: Any):
        self.permissions.append(
            {"title": tool_call.title, "kinds": [o.kind for o in options], "content": len(tool_call.content or [])}
        )
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id="allow_once"))

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append(update.model_dump(by_alias=True, exclude_none=True))

    async def write_text_file(self, session_id: str, path: str, content: str, **_: Any):
        Path(path).write_text(content)
        self.writes.append(path)
        return WriteTextFileResponse()

    async def read_text_file(self, session_id: str, path: str, line=None, limit=None, **_: Any):
        return ReadTextFileResponse(content=Path(path).read_text())

    async def create_terminal(self, *args: Any, **kwargs: Any):
        raise RuntimeError("this client has no terminal")

    async def ext_method(self, method: str, params: dict) -> dict:
        return {}

    async def ext_notification(self, method: str, params: dict) -> None:
        return None


async def main(tokamak: str, root: str, goal: str) -> dict[str, Any]:
    editor = Editor()
    # the SDK passes the agent only a default environment: this one names the test's settings
    async with acp.spawn_agent_process(editor, tokamak, "acp", env=dict(os.environ)) as (connection, _process):
        capabilities = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True))
        init = await connection.initialize(protocol_version=acp.PROTOCOL_VERSION, client_capabilities=capabilities)
        session = await connection.new_session(cwd=root, mcp_servers=[])
        prompt = await connection.prompt(session_id=session.session_id, prompt=[acp.text_block(goal)])
        listed = await connection.list_sessions(cwd=root)
        during_run = len(editor.updates)
        await connection.load_session(cwd=root, session_id=session.session_id, mcp_servers=[])
        replayed = editor.updates[during_run:]
        options = [o.model_dump(by_alias=True) for o in (session.config_options or [])]
        picked = await connection.set_config_option(session_id=session.session_id, config_id="model", value="default")
        # mid-session: edits accepted from now on, then a follow-up question with an image
        switched = await connection.set_config_option(
            session_id=session.session_id, config_id="approval", value="accept_edits"
        )
        follow_up = await connection.prompt(
            session_id=session.session_id,
            prompt=[acp.text_block("What color is this image?"), acp.image_block(RED_PIXEL, "image/png")],
        )
    return {
        "protocol": init.protocol_version,
        "load_session": init.agent_capabilities.load_session,
        "stop_reason": prompt.stop_reason,
        "kinds": [u.get("sessionUpdate") for u in editor.updates[:during_run]],
        "tool_kinds": [u.get("kind") for u in editor.updates[:during_run] if u.get("sessionUpdate") == "tool_call"],
        "permissions": editor.permissions,
        "writes": editor.writes,
        "sessions": [s.session_id for s in listed.sessions],
        "replayed": [u.get("sessionUpdate") for u in replayed],
        "options": [o.get("id") for o in options],
        "picked": [o.model_dump(by_alias=True).get("currentValue") for o in picked.config_options],
        "switched": [o.model_dump(by_alias=True).get("currentValue") for o in switched.config_options],
        "image": init.agent_capabilities.prompt_capabilities.image,
        "follow_up": follow_up.stop_reason,
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))))
