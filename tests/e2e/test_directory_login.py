"""Logging in to the web app with a company directory's user name and password."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.async_api import Browser, expect

from docchat.config import LdapSettings, Settings
from tests.e2e.conftest import DIST, SCREENSHOTS
from tests.support.ldap_server import PEOPLE, SERVICE_DN, SERVICE_PASSWORD, LdapServer
from tests.support.live_server import LiveServer, serving

PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}


@pytest.fixture(scope="module")
def directory_server(
    settings: Settings, e2e_database_url: str, ldap_directory: LdapServer
) -> Iterator[LiveServer]:
    ldap = LdapSettings(  # type: ignore[call-arg]
        _env_file=None,
        url=ldap_directory.url,
        bind_dn=SERVICE_DN,
        bind_password=SERVICE_PASSWORD,
        user_search_base=PEOPLE,
    )
    configured = settings.model_copy(
        update={
            "database_url": e2e_database_url,
            "frontend_dir": DIST,
            "ldap": ldap,
            "auth": settings.auth.model_copy(update={"registration_enabled": False}),
        }
    )
    with serving(configured) as server:
        yield server


async def test_a_person_logs_in_with_their_directory_name(
    browser: Browser, directory_server: LiveServer, ldap_directory: LdapServer
) -> None:
    ldap_directory.add_person("ivan.e2e", "ivan-directory-pass", "ivan@corp.example", "Ivan Petrov")
    context = await browser.new_context(**PHONE, service_workers="block")
    page = await context.new_page()
    await page.goto(directory_server.url)
    name = page.get_by_label("Email or user name")
    await expect(name).to_be_visible()
    # Sign-up is closed here: not offered.
    await expect(page.get_by_role("button", name="No account yet? Sign up")).to_have_count(0)
    await name.fill("ivan.e2e")
    await page.get_by_label("Password").fill("not the password")
    await page.get_by_role("button", name="Log in").click()
    await expect(page.get_by_role("alert")).to_contain_text("Incorrect")
    await page.screenshot(path=str(SCREENSHOTS / "directory-login-phone.png"))
    await page.get_by_label("Password").fill("ivan-directory-pass")
    await page.get_by_role("button", name="Log in").click()
    await expect(page.get_by_role("textbox", name="Message")).to_be_visible()
    await expect(page.get_by_role("button", name="Account: ivan@corp.example")).to_be_attached()
    await context.close()
