from __future__ import annotations

import httpx

from docchat.auth.service import REUSED_REFRESH
from docchat.components import Components
from docchat.config import Settings
from tests.support.users import PASSWORD, login, register


async def test_refresh_tokens_are_single_use_and_reuse_ends_the_login(
    client: httpx.AsyncClient,
) -> None:
    email = await register(client)
    first = (await login(client, email)).json()
    second = await client.post(
        "/api/v1/auth/refresh", json={"refresh_token": first["refresh_token"]}
    )
    assert second.status_code == 200
    # Replaying the spent token (a thief, or a stolen copy) is refused...
    replay = await client.post(
        "/api/v1/auth/refresh", json={"refresh_token": first["refresh_token"]}
    )
    assert replay.status_code == 401 and replay.json()["detail"] == REUSED_REFRESH
    # ...and the legitimate newer token of that login stops working too.
    newer = second.json()["refresh_token"]
    assert (
        await client.post("/api/v1/auth/refresh", json={"refresh_token": newer})
    ).status_code == 401
    # Another login of the same user is not affected.
    other = (await login(client, email)).json()
    assert (
        await client.post("/api/v1/auth/refresh", json={"refresh_token": other["refresh_token"]})
    ).status_code == 200


async def test_logout_ends_the_refresh_chain(client: httpx.AsyncClient) -> None:
    email = await register(client)
    tokens = (await login(client, email)).json()
    assert (
        await client.post("/api/v1/auth/logout", json={"refresh_token": tokens["refresh_token"]})
    ).status_code == 204
    refreshed = await client.post(
        "/api/v1/auth/refresh", json={"refresh_token": tokens["refresh_token"]}
    )
    assert refreshed.status_code == 401
    # Logging out twice, or with garbage, is harmless.
    assert (
        await client.post("/api/v1/auth/logout", json={"refresh_token": "garbage"})
    ).status_code == 204


async def test_repeated_failed_logins_are_throttled(
    client: httpx.AsyncClient, settings: Settings
) -> None:
    email = await register(client)
    for _ in range(settings.auth.login_max_failures):
        assert (await login(client, email, "wrong password")).status_code == 401
    throttled = await login(client, email, "wrong password")
    assert throttled.status_code == 429
    assert int(throttled.headers["retry-after"]) > 0
    # Even the right password waits until the window passes.
    assert (await login(client, email, PASSWORD)).status_code == 429
    # Other accounts are not affected.
    other = await register(client)
    assert (await login(client, other)).status_code == 200


async def test_security_headers(client: httpx.AsyncClient) -> None:
    api = await client.get("/healthz")
    assert api.headers["x-content-type-options"] == "nosniff"
    assert api.headers["x-frame-options"] == "DENY"
    page = await client.get("/")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    docs = await client.get("/docs")
    assert docs.status_code == 200 and "content-security-policy" not in docs.headers


async def test_cors_is_off_unless_configured(
    client: httpx.AsyncClient, settings: Settings, components: Components
) -> None:
    preflight = {"Origin": "https://evil.example", "Access-Control-Request-Method": "GET"}
    response = await client.options("/api/v1/users/me", headers=preflight)
    assert "access-control-allow-origin" not in response.headers

    from docchat.app import attach_components, create_app

    configured = settings.model_copy(update={"cors_origins": ["https://app.example"]})
    app = create_app(configured, run_worker=False)
    attach_components(app, components)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://docchat.test") as other:
        allowed = await other.options(
            "/api/v1/users/me", headers={**preflight, "Origin": "https://app.example"}
        )
        assert allowed.headers["access-control-allow-origin"] == "https://app.example"
        refused = await other.options("/api/v1/users/me", headers=preflight)
        assert "access-control-allow-origin" not in refused.headers
