"""The whole app served by uvicorn on loopback, in a thread: lifespan, worker loop and all."""

from __future__ import annotations

import contextlib
import threading
import time
import urllib.request
from collections.abc import Iterator

import uvicorn
from opentelemetry.sdk.trace import TracerProvider

from docchat.config import Settings
from docchat.main.app import create_app
from docchat.main.cli import uvicorn_options
from tests.support.llm_server import free_port


class LiveServer:
    def __init__(
        self, settings: Settings, *, tracer_provider: TracerProvider | None = None
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        options = {**uvicorn_options(settings), "log_level": "warning"}
        app = create_app(settings, tracer_provider=tracer_provider)
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, **options)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    def start(self, timeout: float = 120) -> LiveServer:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.url}/readyz", timeout=2) as response:  # noqa: S310
                    if response.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError("the live server did not become ready")

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=15)


@contextlib.contextmanager
def serving(
    settings: Settings, *, tracer_provider: TracerProvider | None = None
) -> Iterator[LiveServer]:
    """A live server for the block (a module's fixture): started, then stopped."""
    live = LiveServer(settings, tracer_provider=tracer_provider).start()
    try:
        yield live
    finally:
        live.stop()
