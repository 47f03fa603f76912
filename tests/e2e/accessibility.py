"""axe-core (from the web app's npm packages) run in the page: what it finds serious or
critical. The browser context must bypass the app's Content-Security-Policy, which (rightly)
refuses the injected script."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import Page

AXE = Path(__file__).resolve().parents[2] / "frontend" / "node_modules" / "axe-core" / "axe.min.js"
_RUN = """async () => {
  const result = await axe.run(document, { resultTypes: ["violations"] });
  return result.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => {
      const where = v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(" | ");
      return `${v.id} (${v.impact}): ${v.help} at ${where}`;
    });
}"""


async def serious_violations(page: Page) -> list[str]:
    if not await page.evaluate("typeof axe !== 'undefined'"):
        await page.add_script_tag(path=str(AXE))
    found: list[str] = await page.evaluate(_RUN)
    return found
