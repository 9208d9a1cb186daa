"""The request size limit, enforced before a body is buffered.

A declared `Content-Length` above the limit is refused at once; a chunked body is counted as it
streams in and refused as soon as it crosses the limit (413, `payload_too_large`).
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.api.problem_responses import problem_response
from service.problems import PAYLOAD_TOO_LARGE


class BodySizeLimit:
    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    def _detail(self) -> str:
        return f"the request body exceeds the limit of {self.max_bytes} bytes"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope["headers"]:
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > self.max_bytes:
                    response = problem_response(413, PAYLOAD_TOO_LARGE, self._detail())
                    await response(scope, receive, send)
                    return
        received = 0

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    # Starlette's HTTPException passes through FastAPI's body parsing unchanged
                    # and is answered by the problem handler.
                    raise HTTPException(413, self._detail())
            return message

        await self.app(scope, limited, send)
