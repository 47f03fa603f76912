"""What the server and the worker do when they start."""

from __future__ import annotations

import dataclasses
import gc
import os
import time
from pathlib import Path

from docchat.config import Settings
from docchat.documents.storage import STALE_STAGING_SECONDS
from docchat.events.publisher import EventPublisher
from docchat.llm.client import LLM
from docchat.main.app import create_app
from docchat.main.components import Components, build_components
from docchat.retrieval import languages


async def test_objects_alive_at_start_are_frozen_out_of_full_collections(
    settings: Settings, components: Components
) -> None:
    async def factory(_: Settings) -> Components:
        # The lifespan closes the model client and the publisher on the way out: its own ones,
        # not those every other test shares.
        return dataclasses.replace(
            components,
            llm=LLM(settings.llm),
            publisher=EventPublisher(settings.amqp_url, settings.amqp_exchange),
        )

    long_lived = [{"built": "at start"} for _ in range(1000)]
    frozen_before = gc.get_freeze_count()
    app = create_app(settings, components_factory=factory, run_worker=False)
    async with app.router.lifespan_context(app):
        # Full collections no longer walk them: a full collection of PyTorch's, Chroma's and
        # SQLAlchemy's objects stalled every request for about 340 ms.
        assert gc.get_freeze_count() >= frozen_before + len(long_lived)
    gc.unfreeze()  # the rest of the test run collects as usual


async def test_temporary_files_a_killed_process_left_are_swept_at_start(
    settings: Settings, tmp_path: Path
) -> None:
    own = settings.model_copy(update={"data_dir": tmp_path})
    own.files_dir.mkdir(parents=True)
    left = own.files_dir / ".upload-left-by-a-killed-process"
    left.write_bytes(b"half an upload")
    then = time.time() - STALE_STAGING_SECONDS - 60
    os.utime(left, (then, then))

    components = await build_components(own, sessionmaker=None)  # type: ignore[arg-type]
    try:
        assert not left.exists()
    finally:
        await components.llm.close()
        components.close()


async def test_the_language_identifier_is_read_at_start_not_by_the_first_question(
    settings: Settings, components: Components
) -> None:
    """Its model is stored compressed (about a second to read): the first question after a
    start waited for it."""

    async def factory(_: Settings) -> Components:
        return dataclasses.replace(
            components,
            llm=LLM(settings.llm),
            publisher=EventPublisher(settings.amqp_url, settings.amqp_exchange),
        )

    languages._identifier.cache_clear()
    app = create_app(settings, components_factory=factory, run_worker=False)
    async with app.router.lifespan_context(app):
        await app.state.identifier_loading
        assert languages._identifier.cache_info().currsize == 1
    gc.unfreeze()
