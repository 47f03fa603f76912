"""What a server's start-up leaves behind is frozen out of the garbage collector's reach."""

from __future__ import annotations

import gc

from docchat.app import create_app
from docchat.components import Components
from docchat.config import Settings


async def test_objects_alive_at_start_are_frozen_out_of_full_collections(
    settings: Settings, components: Components
) -> None:
    async def factory(_: Settings) -> Components:
        return components

    long_lived = [{"built": "at start"} for _ in range(1000)]
    frozen_before = gc.get_freeze_count()
    app = create_app(settings, components_factory=factory, run_worker=False)
    async with app.router.lifespan_context(app):
        # Full collections no longer walk them: a full collection of PyTorch's, Chroma's and
        # SQLAlchemy's objects stalled every request for about 340 ms.
        assert gc.get_freeze_count() >= frozen_before + len(long_lived)
    gc.unfreeze()  # the rest of the test run collects as usual
