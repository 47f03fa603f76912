"""Regenerate `.env.example` and the configuration page's variables table from the settings."""

from __future__ import annotations

from pathlib import Path

from docchat.main.settings_docs import CONFIGURATION_PAGE, env_example, with_settings_table

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    (ROOT / ".env.example").write_text(env_example())
    page = ROOT / CONFIGURATION_PAGE
    page.write_text(with_settings_table(page.read_text()))


if __name__ == "__main__":
    main()
