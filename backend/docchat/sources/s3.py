"""An S3-compatible bucket prefix as a source (AWS S3, MinIO, Ceph, ...): its objects below the
prefix. An object's version is its ETag (which changes with its content) and size; "folders"
(keys ending in "/") are skipped. boto3 blocks: every call runs in a thread. Its requests go
through connections to checked addresses only (`sources.connections`), the bucket's own host
name included.
"""

from __future__ import annotations

import asyncio
import contextlib
import posixpath
from collections.abc import AsyncIterator, Mapping
from typing import Any

from docchat.documents.storage import ByteSource
from docchat.extraction.dates import moment_date
from docchat.sources.connections import AddressRefused, Guard, pool_manager, send_through
from docchat.sources.port import Connector, Setting, SettingType, SourceError, SourceItem

PAGE = 1000


class _ObjectBody:
    """An object's body as a `ByteSource`, read in a thread."""

    def __init__(self, body: Any) -> None:
        self.body = body

    async def read(self, size: int = -1) -> bytes:
        data: bytes = await asyncio.to_thread(self.body.read, None if size < 0 else size)
        return data


def _reason(exc: Exception) -> str:
    """What the bucket said, for the source's owner (never a stack or a secret)."""
    from botocore.exceptions import BotoCoreError, ClientError

    if isinstance(exc, AddressRefused):
        return str(exc)
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        return (
            f"the bucket refused: {error.get('Code', 'error')} {error.get('Message', '')}".strip()
        )
    if isinstance(exc, BotoCoreError):
        return "the bucket could not be reached"
    return f"the bucket could not be read ({type(exc).__name__})"


class S3PrefixSource:
    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        *,
        endpoint_url: str | None = None,
        region: str = "us-east-1",
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        allowed_hosts: tuple[str, ...] = (),
    ) -> None:
        import boto3
        import urllib3
        from botocore import UNSIGNED
        from botocore.config import Config
        from botocore.httpsession import get_cert_path

        if not bucket:
            raise SourceError("an S3 source needs a bucket")
        self.bucket = bucket
        # A prefix names a folder of the bucket ("docs" lists "docs/..." and not "docs-old/").
        folder = prefix.strip("/")
        self.prefix = f"{folder}/" if folder else ""
        signed = bool(access_key_id and secret_access_key)
        try:
            # A session of its own, from nothing but these settings: never the server's own
            # credentials (environment, profile, instance role) nor its configured endpoints,
            # which could read the installation's own bucket. Without keys: unsigned requests,
            # for public buckets.
            session = boto3.session.Session(
                aws_access_key_id=access_key_id if signed else None,
                aws_secret_access_key=secret_access_key if signed else None,
                region_name=region or "us-east-1",
            )
            self._client: Any = session.client(
                "s3",
                endpoint_url=endpoint_url or None,
                config=Config(
                    retries={"mode": "standard", "max_attempts": 3},
                    connect_timeout=10,
                    read_timeout=60,
                    signature_version=None if signed else UNSIGNED,
                    ignore_configured_endpoint_urls=True,
                ),
            )
        except Exception as exc:  # a malformed region or endpoint
            raise SourceError(f"its settings cannot be used: {exc}") from exc
        # Sent by connections of our own, which connect only to the addresses they checked.
        connections = pool_manager(
            Guard(allowed_hosts),
            timeout=urllib3.Timeout(connect=10, read=60),
            retries=False,
            cert_reqs="CERT_REQUIRED",
            ca_certs=get_cert_path(True),  # the certificates botocore itself trusts
        )
        self._client.meta.events.register("before-send.s3", send_through(connections))

    @classmethod
    def from_settings(cls, settings: Mapping[str, str]) -> S3PrefixSource:
        return cls(
            settings.get("bucket", ""),
            settings.get("prefix", ""),
            endpoint_url=settings.get("endpoint_url"),
            region=settings.get("region", "us-east-1"),
            access_key_id=settings.get("access_key_id"),
            secret_access_key=settings.get("secret_access_key"),
            allowed_hosts=tuple(
                host for host in settings.get("fetch_allowed_hosts", "").split(",") if host
            ),
        )

    def _listing(self) -> list[SourceItem]:
        found = []
        try:
            pages = self._client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=self.prefix, PaginationConfig={"PageSize": PAGE}
            )
            for page in pages:
                for entry in page.get("Contents", []):
                    key = str(entry["Key"])
                    if key.endswith("/"):
                        continue
                    relative = key[len(self.prefix) :]
                    version = f"{str(entry.get('ETag', '')).strip(chr(34))}-{entry['Size']}"
                    found.append(
                        SourceItem(
                            relative,
                            posixpath.basename(key),
                            version,
                            int(entry["Size"]),
                            moment_date(entry.get("LastModified")),
                        )
                    )
        except Exception as exc:
            raise SourceError(_reason(exc)) from exc
        return found

    async def items(self) -> AsyncIterator[SourceItem]:
        for item in await asyncio.to_thread(self._listing):
            yield item

    @contextlib.asynccontextmanager
    async def open(self, item: SourceItem) -> AsyncIterator[ByteSource]:
        try:
            response = await asyncio.to_thread(
                self._client.get_object, Bucket=self.bucket, Key=f"{self.prefix}{item.key}"
            )
        except Exception as exc:
            raise SourceError(_reason(exc)) from exc
        body = response["Body"]
        try:
            yield _ObjectBody(body)
        finally:
            await asyncio.to_thread(body.close)


S3 = Connector(
    S3PrefixSource.from_settings,
    "S3 bucket",
    (
        Setting("bucket", "Bucket", placeholder="team-docs", required=True, target=True),
        Setting("prefix", "Prefix", placeholder="wiki/"),
        Setting(
            "endpoint_url",
            "Endpoint",
            help="MinIO and others; empty for AWS",
            placeholder="https://minio.example.com",
            type=SettingType.url,
            address=True,
        ),
        Setting("region", "Region", placeholder="us-east-1", target=True),
        Setting("access_key_id", "Access key ID", secret=True),
        Setting(
            "secret_access_key",
            "Secret access key",
            help="stored encrypted, never shown again",
            secret=True,
        ),
    ),
)
