"""Logins through a company directory: a real slapd started by the tests (tests/support/
ldap_server.py), the app in front of it as configured by LDAP_* settings."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.audit.models import AuditEntry
from docchat.config import LdapSettings, Settings
from docchat.main.app import attach_components, create_app
from docchat.main.components import Components
from docchat.users.models import User
from docchat.users.passwords import hash_password_now
from tests.support.ldap_server import APPS, GROUPS, PEOPLE, SERVICE_DN, SERVICE_PASSWORD, LdapServer
from tests.support.llm_server import free_port
from tests.support.users import PASSWORD, admin_headers, login, register, unique_email

ALICE_PASSWORD = "alice-directory-pass"


def search_then_bind(server: LdapServer, **changes: Any) -> LdapSettings:
    values: dict[str, Any] = {
        "url": server.url,
        "bind_dn": SERVICE_DN,
        "bind_password": SERVICE_PASSWORD,
        "user_search_base": PEOPLE,
        "timeout_seconds": 3,
    }
    return LdapSettings(_env_file=None, **(values | changes))  # type: ignore[call-arg]


@pytest_asyncio.fixture
async def connect(settings: Settings, components: Components) -> AsyncIterator[Any]:
    """An HTTP client to an app whose logins go through the directory as `ldap` says."""
    clients: list[httpx.AsyncClient] = []

    async def open_client(ldap: LdapSettings, **changes: Any) -> httpx.AsyncClient:
        configured = settings.model_copy(update={"ldap": ldap, **changes})
        app = create_app(configured, run_worker=False)
        attach_components(app, components)
        app.state.settings = configured
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        client = httpx.AsyncClient(transport=transport, base_url="http://docchat.test")
        clients.append(client)
        return client

    yield open_client
    for client in clients:
        await client.aclose()


def bearer(response: httpx.Response) -> dict[str, str]:
    assert response.status_code == 200, response.text
    return {"Authorization": f"Bearer {response.json()['access_token']}"}


def unique_uid(prefix: str) -> str:
    return unique_email(prefix).split("@")[0]


async def group_names(client: httpx.AsyncClient, headers: dict[str, str]) -> dict[str, str]:
    listed = await client.get("/api/v1/groups", params={"limit": 100}, headers=headers)
    return {group["name"]: group["source"] for group in listed.json()["items"]}


async def members(client: httpx.AsyncClient, admin: dict[str, str], name: str) -> set[str]:
    listed = await client.get("/api/v1/groups", params={"limit": 100}, headers=admin)
    group = next(group for group in listed.json()["items"] if group["name"] == name)
    page = await client.get(f"/api/v1/admin/groups/{group['id']}/members", headers=admin)
    return {member["email"] for member in page.json()["items"]}


async def test_a_directory_person_logs_in_with_their_groups_and_follows_them(
    ldap_directory: LdapServer, connect: Any, session: AsyncSession
) -> None:
    uid = unique_uid("alice")
    mail = f"{uid}@corp.example"
    ldap_directory.add_person(uid, ALICE_PASSWORD, mail, "Alice Liddell")
    engineering, sales = unique_uid("engineering"), unique_uid("sales")
    ldap_directory.add_group(engineering, uid)
    ldap_directory.add_group(sales)
    client = await connect(search_then_bind(ldap_directory))

    methods = await client.get("/api/v1/auth/methods")
    assert methods.json() == {
        "password": True,
        "directory": True,
        "registration": True,
        "single_sign_on": None,
    }
    # By directory name: an account is made, named as in the directory, in its groups.
    headers = bearer(await login(client, uid, ALICE_PASSWORD))
    me = (await client.get("/api/v1/users/me", headers=headers)).json()
    assert (me["email"], me["display_name"]) == (mail, "Alice Liddell")
    assert (await group_names(client, headers))[engineering] == "ldap"
    admin = await admin_headers(client, session)
    assert await members(client, admin, engineering) == {mail}
    # By e-mail: the same account.
    again = bearer(await login(client, mail.upper(), ALICE_PASSWORD))
    assert (await client.get("/api/v1/users/me", headers=again)).json()["id"] == me["id"]

    # Moved upstream from engineering to sales: at the next login, here too.
    ldap_directory.leave(engineering, uid)
    ldap_directory.join(sales, uid)
    bearer(await login(client, uid, ALICE_PASSWORD))
    assert await members(client, admin, engineering) == set()
    assert await members(client, admin, sales) == {mail}
    # Those groups' members are the directory's to decide; a directory account has no
    # password here to change.
    listed = await client.get("/api/v1/groups", params={"limit": 100}, headers=admin)
    group = next(g for g in listed.json()["items"] if g["name"] == sales)
    refused = await client.delete(
        f"/api/v1/admin/groups/{group['id']}/members/{me['id']}", headers=admin
    )
    assert refused.status_code == 409
    assert "directory" in refused.json()["detail"]
    change = await client.post(
        "/api/v1/users/me/password",
        json={"current_password": ALICE_PASSWORD, "new_password": "a brand new passphrase"},
        headers=headers,
    )
    assert change.status_code == 403
    assert "directory" in change.json()["detail"]
    # The directory's password does not work as a local one once the directory is gone.
    plain = await connect(LdapSettings(_env_file=None))  # type: ignore[call-arg]
    assert (await login(plain, mail, ALICE_PASSWORD)).status_code == 401


async def test_member_of_keeps_to_the_group_search_base(
    ldap_directory: LdapServer, connect: Any, session: AsyncSession
) -> None:
    uid = unique_uid("ivy")
    ldap_directory.add_person(uid, "ivy-directory-pass", f"{uid}@corp.example", "Ivy")
    ours, theirs = unique_uid("staff"), unique_uid("billing-admins")
    ldap_directory.add_group(ours, uid)
    ldap_directory.add_group(theirs, uid, under=APPS)
    client = await connect(search_then_bind(ldap_directory, group_search_base=GROUPS))
    headers = bearer(await login(client, uid, "ivy-directory-pass"))
    names = await group_names(client, headers)
    assert ours in names
    assert theirs not in names


async def test_a_local_group_of_the_same_name_is_left_alone(
    ldap_directory: LdapServer, connect: Any, session: AsyncSession
) -> None:
    uid = unique_uid("dora")
    ldap_directory.add_person(uid, ALICE_PASSWORD, f"{uid}@corp.example", "Dora")
    name = unique_uid("Finance")
    ldap_directory.add_group(name, uid)
    client = await connect(search_then_bind(ldap_directory))
    admin = await admin_headers(client, session)
    made = await client.post("/api/v1/admin/groups", json={"name": name.lower()}, headers=admin)
    assert made.status_code == 201
    bearer(await login(client, uid, ALICE_PASSWORD))
    assert await members(client, admin, name.lower()) == set()


async def test_wrong_empty_and_injected_credentials_are_refused(
    ldap_directory: LdapServer, connect: Any, session: AsyncSession
) -> None:
    uid = unique_uid("bob")
    ldap_directory.add_person(uid, "bob-directory-pass", f"{uid}@corp.example", "Bob")
    client = await connect(search_then_bind(ldap_directory))
    assert (await login(client, uid, "not his password")).status_code == 401
    # An empty password would be an anonymous bind, which slapd accepts: never sent.
    assert (await login(client, uid, "")).status_code in (401, 422)
    # Filter syntax in the name is only text: no wildcard reaches anyone's entry.
    for name in ("*", f"{uid[:3]}*", f"{uid})(uid=*", f"*)(|(uid={uid}", f"{uid}\x00"):
        response = await login(client, name, "bob-directory-pass")
        assert response.status_code == 401, (name, response.text)
    failed = await session.execute(
        select(AuditEntry).where(
            AuditEntry.action == "auth.login_failed", AuditEntry.actor_email == uid
        )
    )
    assert failed.scalars().first().detail == {"reason": "directory password"}
    assert (await login(client, uid, "bob-directory-pass")).status_code == 200


async def test_an_existing_account_is_linked_by_email_and_keeps_it_when_the_mail_changes(
    ldap_directory: LdapServer, connect: Any, session: AsyncSession
) -> None:
    uid = unique_uid("carol")
    mail = f"{uid}@corp.example"
    client = await connect(search_then_bind(ldap_directory))
    # A local account with this address, made before the directory was set up: by Carol, or
    # by anyone (sign-up checks no address). Its key and password must not outlive the link.
    await register(client, mail)
    local = bearer(await login(client, mail))
    made = await client.post(
        "/api/v1/api-keys", json={"name": "k", "scopes": ["read"]}, headers=local
    )
    assert made.status_code == 201, made.text
    key = {"Authorization": f"Bearer {made.json()['secret']}"}
    ldap_directory.add_person(uid, "carol-directory-pass", mail, "Carol")
    headers = bearer(await login(client, uid, "carol-directory-pass"))
    assert (await client.get("/api/v1/users/me", headers=key)).status_code == 401
    assert (await client.get("/api/v1/users/me", headers=local)).status_code == 401
    plain = await connect(LdapSettings(_env_file=None))  # type: ignore[call-arg]
    assert (await login(plain, mail)).status_code == 401
    me = (await client.get("/api/v1/users/me", headers=headers)).json()
    linked = await session.execute(
        select(AuditEntry).where(
            AuditEntry.action == "user.linked", AuditEntry.target_id == me["id"]
        )
    )
    assert linked.scalars().first() is not None
    # Renamed upstream: the link (by entryUUID) finds the same account, which follows.
    ldap_directory.set_mail(uid, f"{uid}.new@corp.example")
    after = bearer(await login(client, uid, "carol-directory-pass"))
    renamed = (await client.get("/api/v1/users/me", headers=after)).json()
    assert (renamed["id"], renamed["email"]) == (me["id"], f"{uid}.new@corp.example")


async def test_the_break_glass_account_stays_local(
    ldap_directory: LdapServer, connect: Any, settings: Settings
) -> None:
    keeper = unique_email("keeper")
    await register(await connect(LdapSettings(_env_file=None)), keeper)  # type: ignore[call-arg]
    uid = unique_uid("impostor")
    ldap_directory.add_person(uid, "impostor-directory-pass", keeper, "Impostor")
    auth = settings.auth.model_copy(update={"password_login": False, "break_glass_email": keeper})
    client = await connect(search_then_bind(ldap_directory), auth=auth)
    # Its own password, not the directory's, though the directory has the address.
    assert (await login(client, keeper)).status_code == 200
    assert (await login(client, keeper, "impostor-directory-pass")).status_code == 401
    refused = await login(client, uid, "impostor-directory-pass")
    assert refused.status_code == 403
    assert "break-glass" in refused.json()["detail"]


async def test_a_failed_search_is_an_outage_not_a_stranger(
    ldap_directory: LdapServer, connect: Any
) -> None:
    uid = unique_uid("gus")
    ldap_directory.add_person(uid, "gus-directory-pass", f"{uid}@corp.example", "Gus")
    nowhere = search_then_bind(ldap_directory, user_search_base="ou=nowhere,dc=example,dc=org")
    client = await connect(nowhere)
    assert (await login(client, uid, "gus-directory-pass")).status_code == 503


async def test_accounts_are_not_made_when_turned_off_and_need_an_email(
    ldap_directory: LdapServer, connect: Any
) -> None:
    client = await connect(search_then_bind(ldap_directory, create_accounts=False))
    uid = unique_uid("erin")
    ldap_directory.add_person(uid, "erin-directory-pass", f"{uid}@corp.example", "Erin")
    refused = await login(client, uid, "erin-directory-pass")
    assert refused.status_code == 403
    assert "ask an administrator" in refused.json()["detail"]
    nameless = unique_uid("frank")
    ldap_directory.add_person(nameless, "frank-directory-pass", None, "Frank")
    client = await connect(search_then_bind(ldap_directory))
    no_mail = await login(client, nameless, "frank-directory-pass")
    assert no_mail.status_code == 403
    assert "no e-mail" in no_mail.json()["detail"]


async def test_a_local_admin_logs_in_while_the_directory_is_down(
    connect: Any, session: AsyncSession
) -> None:
    email = unique_email("breakglass")
    session.add(User(email=email, password_hash=hash_password_now(PASSWORD), role="admin"))
    await session.commit()
    closed = f"ldap://127.0.0.1:{free_port()}"
    client = await connect(
        LdapSettings(_env_file=None, url=closed, bind_dn=SERVICE_DN, timeout_seconds=1)  # type: ignore[call-arg]
    )
    assert (await login(client, email)).status_code == 200
    down = await login(client, "somebody", "their directory password")
    assert down.status_code == 503
    assert "directory cannot be reached" in down.json()["detail"]


async def test_start_tls_checks_the_directory_certificate(
    ldap_directory: LdapServer, connect: Any
) -> None:
    uid = unique_uid("grace")
    ldap_directory.add_person(uid, "grace-directory-pass", f"{uid}@corp.example", "Grace")
    trusted = await connect(
        search_then_bind(ldap_directory, start_tls=True, ca_cert_file=ldap_directory.ca_file)
    )
    assert (await login(trusted, uid, "grace-directory-pass")).status_code == 200
    # The test CA is not among the system's: the certificate is refused, no password sent.
    unknown = await connect(search_then_bind(ldap_directory, start_tls=True))
    assert (await login(unknown, uid, "grace-directory-pass")).status_code == 503


async def test_direct_bind_with_groups_found_by_search(
    ldap_directory: LdapServer, connect: Any, session: AsyncSession
) -> None:
    uid = unique_uid("heidi")
    mail = f"{uid}@corp.example"
    ldap_directory.add_person(uid, "heidi-directory-pass", mail, "Heidi")
    team, unix = unique_uid("support"), unique_uid("unix")
    ldap_directory.add_group(team, uid)
    ldap_directory.add_posix_group(unix, uid)  # names her by login name (memberUid)
    client = await connect(
        LdapSettings(  # type: ignore[call-arg]
            _env_file=None,
            url=ldap_directory.url,
            user_dn_template=f"uid={{username}},{PEOPLE}",
            groups="search",
            group_search_base=GROUPS,
        )
    )
    assert (await login(client, uid, "wrong")).status_code == 401
    assert (await login(client, f"{uid},ou=people", "heidi-directory-pass")).status_code == 401
    bearer(await login(client, uid, "heidi-directory-pass"))
    admin = await admin_headers(client, session)
    assert await members(client, admin, team) == {mail}
    assert await members(client, admin, unix) == {mail}


def test_settings_say_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="LDAP_BIND_DN"):
        LdapSettings(_env_file=None, url="ldap://127.0.0.1:1")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="ldap://"):
        LdapSettings(_env_file=None, url="http://x", bind_dn="cn=x")  # type: ignore[call-arg]
