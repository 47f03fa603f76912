"""The question dictionaries compiled once per test run and linked into each data folder an
app starts on: compiling them takes some 20 s of CPU, which every fresh DATA_DIR would pay
again (in a background thread of the server under test, or a process beside it)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from docchat.config import TranslationSettings
from docchat.retrieval.word_by_word import Glossary

NAME = "glossary.sqlite"  # Settings.glossary_file's name in DATA_DIR


def compile_in(data_dir: Path) -> Path:
    """The glossary compiled in `data_dir` (waiting for a compile already under way there);
    a path that does not exist when no dictionary is installed."""
    path = data_dir / NAME
    folder = TranslationSettings(_env_file=None).dictionary_folder  # type: ignore[call-arg]
    Glossary(path, folder).wait_ready()
    return path


def seed(compiled: Path, data_dir: Path) -> Path:
    """Put the compiled glossary in `data_dir` (a hard link, else a copy); returns data_dir.
    The app checks its fingerprint as with any compiled file, and a recompile replaces the
    file whole, never writing through the link."""
    data_dir.mkdir(parents=True, exist_ok=True)
    target = data_dir / NAME
    if compiled.is_file() and not target.exists():
        try:
            os.link(compiled, target)
        except OSError:
            shutil.copyfile(compiled, target)
    return data_dir
