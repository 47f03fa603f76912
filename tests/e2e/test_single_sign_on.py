"""Single sign-on in the web app: the button, the provider's own login page, and back."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.async_api import Browser, expect

from docchat.config import OidcSettings, Settings
from tests.e2e.conftest import DIST, SCREENSHOTS
from tests.support import oidc_provider
from tests.support.live_server import LiveServer
from tests.support.llm_server import free_port
from tests.support.oidc_provider import CLIENT_ID, CLIENT_SECRET, OidcServer

DESKTOP = {"width": 1400, "height": 900}
# Resolves once the app's service worker controls the page (the page's CSP allows no eval, so
# no wait_for_function).
CONTROLLED = """navigator.serviceWorker.ready.then(() => new Promise((resolve) => {
  if (navigator.serviceWorker.controller) resolve(true);
  navigator.serviceWorker.addEventListener("controllerchange", () => resolve(true));
}))"""
# How the browser routed a request of the API made by the page: "network" when the worker's
# static route took it there without waking the worker (the entry appears once it is read).
ROUTED = """fetch("/api/v1/auth/methods?routed")
  .then((response) => response.text())
  .then(() => new Promise((resolve) => setTimeout(resolve, 300)))
  .then(() => {
    const entries = performance.getEntriesByType("resource");
    const entry = entries.find((e) => e.name.endsWith("?routed"));
    return String(entry && entry.workerMatchedSourceType);
  })"""


@pytest.fixture(scope="module")
def sso(
    settings: Settings, e2e_database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LiveServer, OidcServer]]:
    if not oidc_provider.available():
        pytest.fail(f"The single sign-on tests need node and: {oidc_provider.INSTALL}")
    port = free_port()
    oidc = OidcSettings(  # type: ignore[call-arg]
        _env_file=None,
        issuer=f"http://127.0.0.1:{port}",
        name="Example SSO",
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        scopes="openid email profile groups",
    )
    configured = settings.model_copy(
        update={
            "database_url": e2e_database_url,
            "frontend_dir": DIST,
            "oidc": oidc,
            "auth": settings.auth.model_copy(
                update={"password_login": False, "break_glass_email": "keeper@example.com"}
            ),
        }
    )
    server = LiveServer(configured)
    callback = f"{server.url}/api/v1/auth/oidc/callback"
    folder = tmp_path_factory.mktemp("oidc-e2e")
    with oidc_provider.running_provider(folder, [callback], port=port) as provider:
        server.start()
        try:
            yield server, provider
        finally:
            server.stop()


async def test_sign_in_with_the_provider_and_back_to_the_page(
    browser: Browser, sso: tuple[LiveServer, OidcServer]
) -> None:
    server, provider = sso
    provider.set_account(
        "lin", email="lin@corp.example", email_verified=True, name="Lin Wei", groups=["ops"]
    )
    context = await browser.new_context(viewport=DESKTOP, service_workers="block")
    page = await context.new_page()
    await page.goto(f"{server.url}/collections")
    sign_in = page.get_by_role("link", name="Sign in with Example SSO")
    await expect(sign_in).to_be_visible()
    # Passwords are off: the form is folded away for the break-glass account; no sign-up.
    await expect(page.get_by_label("Password")).to_have_count(0)
    await expect(page.get_by_role("button", name="No account yet? Sign up")).to_have_count(0)
    await page.screenshot(path=str(SCREENSHOTS / "sso-login.png"))
    await sign_in.click()
    # The provider's own login page (oidc-provider's).
    await page.locator("input[name=login]").fill("lin")
    await page.locator("input[name=password]").fill("anything")
    await page.get_by_role("button", name="Sign-in").click()
    # Back where the sign-in started, signed in, with no ticket left in the address.
    await expect(page.get_by_role("heading", name="Collections")).to_be_visible()
    await expect(page.get_by_role("button", name="Account: lin@corp.example")).to_be_attached()
    assert page.url == f"{server.url}/collections"
    await page.get_by_role("button", name="Log out").click()
    await expect(page.get_by_role("link", name="Sign in with Example SSO")).to_be_visible()
    # A refusal comes back as a message on the login page.
    provider.set_account("nobody", email="lin@corp.example", email_verified=False, name="X")
    await context.clear_cookies()
    await page.get_by_role("link", name="Sign in with Example SSO").click()
    await page.locator("input[name=login]").fill("nobody")
    await page.locator("input[name=password]").fill("anything")
    await page.get_by_role("button", name="Sign-in").click()
    await expect(page.get_by_role("status")).to_contain_text("not verified your e-mail")
    await page.screenshot(path=str(SCREENSHOTS / "sso-refused.png"))
    await context.close()


async def test_sign_in_from_a_browser_that_runs_the_apps_service_worker(
    browser: Browser, sso: tuple[LiveServer, OidcServer]
) -> None:
    """Any browser that has opened the app before runs its service worker; the sign-in's
    requests must pass it by, each requested once (issue 67: with navigation preload the
    browser requested the callback twice, and the second return of the code was refused)."""
    server, provider = sso
    provider.set_account("ren", email="ren@corp.example", email_verified=True, name="Ren Ito")
    context = await browser.new_context(viewport=DESKTOP, service_workers="allow")
    page = await context.new_page()
    await page.goto(f"{server.url}/collections")
    await page.evaluate(CONTROLLED)
    await page.reload()  # the second visit, through the worker
    await page.get_by_role("link", name="Sign in with Example SSO").click()
    await page.locator("input[name=login]").fill("ren")
    await page.locator("input[name=password]").fill("anything")
    await page.get_by_role("button", name="Sign-in").click()
    await expect(page.get_by_role("button", name="Account: ren@corp.example")).to_be_attached()
    await expect(page.get_by_role("heading", name="Collections")).to_be_visible()
    assert page.url == f"{server.url}/collections"
    await expect(page.get_by_text("refused")).to_have_count(0)
    # Navigation preload is off: it requests every address again that the worker leaves alone.
    preload = await page.evaluate(
        "navigator.serviceWorker.ready.then((r) => r.navigationPreload.getState())"
    )
    assert preload["enabled"] is False
    # And the API goes to the network by the browser's own routing, the worker not woken.
    assert await page.evaluate(ROUTED) == "network"
    await context.close()
