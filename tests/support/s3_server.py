"""An S3-compatible server on loopback (moto's, which implements the S3 REST API), so boto3's
real path runs: request signing, listing pages, errors."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import boto3
from moto.server import ThreadedMotoServer

from tests.support.llm_server import free_port

ACCESS_KEY_ID = "docchat-test"
SECRET_ACCESS_KEY = "docchat-test-secret"


@contextlib.contextmanager
def s3_server() -> Iterator[str]:
    """The endpoint URL of a server that runs while the block does."""
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def bucket_client(endpoint: str) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id=ACCESS_KEY_ID,
        aws_secret_access_key=SECRET_ACCESS_KEY,
    )


def empty_and_remove(client: Any, bucket: str) -> None:
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for found in page.get("Contents", []):
            client.delete_object(Bucket=bucket, Key=found["Key"])
    client.delete_bucket(Bucket=bucket)
