"""Regenerate `.env.example` and the README's configuration table from the settings object."""

from __future__ import annotations

import re
from pathlib import Path

from docchat.settings_docs import env_example, markdown_table

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- settings-table:start -->", "<!-- settings-table:end -->"


def main() -> None:
    (ROOT / ".env.example").write_text(env_example())
    readme = ROOT / "README.md"
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.DOTALL)
    readme.write_text(pattern.sub(f"{START}\n{markdown_table()}{END}", readme.read_text()))


if __name__ == "__main__":
    main()
