"""More than one process, as a team would deploy it: two API processes and a worker process of
their own, sharing PostgreSQL, a Chroma server (`chroma run`) and one data folder (the shared
volume that holds uploaded files and the generated signing key)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support import glossary
from tests.support.llm_server import Reply, ScriptedLLM
from tests.support.processes import (
    Process,
    docchat_env,
    start_api,
    start_chroma,
    start_worker,
    wait_for,
)
from tests.support.users import PASSWORD

FAQ = "Visitors to the Harbour archive must book the reading room two days ahead."
MARKER = "two days ahead"


@pytest.fixture(scope="module")
def cluster(
    database_url: str,
    scripted_llm: ScriptedLLM,
    tmp_path_factory: pytest.TempPathFactory,
    compiled_glossary: Path,
) -> Iterator[tuple[dict[str, Process], Path]]:
    root = tmp_path_factory.mktemp("cluster")
    logs = root / "logs"
    logs.mkdir()
    chroma = start_chroma(root / "chroma", logs)
    shared = glossary.seed(compiled_glossary, root / "shared-volume")
    # No AUTH_SECRET_KEY: the processes agree on the key generated in the shared data folder.
    env = docchat_env(
        DATABASE_URL=database_url,
        DATA_DIR=str(shared),
        CHROMA_URL=str(chroma.url),
        LLM_BASE_URL=scripted_llm.base_url,
        LLM_MODEL="scripted-model",
        ANSWER_PROGRESS_SECONDS="0.2",
    )
    processes: dict[str, Process] = {
        "chroma": chroma,
        "api1": start_api("api1", env, logs),
        "api2": start_api("api2", env, logs),
        "worker": start_worker("worker", env, logs),
    }
    try:
        for name in ("api1", "api2"):
            wait_for(processes[name], f"{processes[name].url}/readyz")
        yield processes, shared
    finally:
        for process in processes.values():
            process.stop()


def _token(api: str, email: str) -> dict[str, str]:
    response = httpx.post(
        f"{api}/api/v1/auth/login", data={"username": email, "password": PASSWORD}, timeout=30
    )
    assert response.status_code == 200, response.text
    return {"Authorization": f"Bearer {response.json()['access_token']}"}


def _ask(api: str, headers: dict[str, str], question: str) -> dict[str, object]:
    response = httpx.post(
        f"{api}/api/v1/messages", headers=headers, json={"content": question}, timeout=60
    )
    assert response.status_code == 200, response.text
    answer: dict[str, object] = response.json()["assistant_message"]
    return answer


def _stored_copies(shared: Path) -> int:
    files = [path for path in (shared / "files").rglob("*") if path.is_file()]
    return sum(path.read_bytes() == FAQ.encode() for path in files)


def test_upload_ask_and_delete_across_two_api_processes_and_a_worker(
    cluster: tuple[dict[str, Process], Path], scripted_llm: ScriptedLLM
) -> None:
    processes, shared = cluster
    api1, api2 = str(processes["api1"].url), str(processes["api2"].url)
    email = f"team-{uuid.uuid4().hex[:8]}@example.com"
    registered = httpx.post(
        f"{api1}/api/v1/auth/register", json={"email": email, "password": PASSWORD}, timeout=30
    )
    assert registered.status_code == 201
    # A token signed by one process is accepted by the other (one key, in the shared folder).
    first, second = _token(api1, email), _token(api2, email)
    assert httpx.get(f"{api2}/api/v1/users/me", headers=first, timeout=10).status_code == 200

    upload = httpx.post(
        f"{api1}/api/v1/documents",
        headers=first,
        files={"file": ("faq.txt", FAQ.encode(), "text/plain")},
        timeout=30,
    )
    assert upload.status_code == 202, upload.text
    document_id = upload.json()["id"]
    deadline = time.monotonic() + 120
    status = ""
    while time.monotonic() < deadline and status != "completed":
        status = httpx.get(
            f"{api2}/api/v1/documents/{document_id}", headers=second, timeout=10
        ).json()["status"]
        assert status != "failed", processes["worker"].output()
        time.sleep(0.3)
    assert status == "completed", processes["worker"].output()
    # The worker read the file that the first API process wrote to the shared volume.
    file = httpx.get(f"{api2}/api/v1/documents/{document_id}/file", headers=second, timeout=10)
    assert file.content == FAQ.encode() and _stored_copies(shared) == 1

    scripted_llm.reset()
    scripted_llm.script("Book it two days ahead [1].", "Book it two days ahead [1].")
    for api, headers in ((api2, second), (api1, first)):
        answer = _ask(api, headers, "How early must the Harbour archive reading room be booked?")
        assert answer["sources"], answer
    assert MARKER in json.dumps(scripted_llm.requests)

    deleted = httpx.delete(f"{api2}/api/v1/documents/{document_id}", headers=second, timeout=30)
    assert deleted.status_code == 204
    assert (
        httpx.get(f"{api1}/api/v1/documents/{document_id}", headers=first, timeout=10).status_code
        == 404
    )
    scripted_llm.reset()
    after = _ask(api1, first, "How early must the Harbour archive reading room be booked?")
    assert after["sources"] is None
    assert MARKER not in json.dumps(scripted_llm.requests)
    assert _stored_copies(shared) == 0  # the file left the shared volume with the document


WORDS = [f"word{number}" for number in range(30)]


def _ask_and_leave(api: str, headers: dict[str, str], deltas: int) -> tuple[str, str, str]:
    """Ask on `api`, read `deltas` pieces, go away: (answer id, text read, last event id)."""
    shown, answer_id, last_id, event = "", "", "", ""
    body = {"content": "Tell me a long story", "rag_enabled": False}
    with httpx.stream(
        "POST", f"{api}/api/v1/messages/stream", headers=headers, json=body, timeout=30
    ) as response:
        for line in response.iter_lines():
            if line.startswith("id: "):
                last_id = line.removeprefix("id: ")
            elif line.startswith("event: "):
                event = line.removeprefix("event: ")
            elif line.startswith("data: "):
                data = json.loads(line.removeprefix("data: "))
                if event == "meta":
                    answer_id = data["assistant_message_id"]
                elif event == "delta":
                    shown += data["text"]
                    deltas -= 1
                    if deltas == 0:
                        break
    return answer_id, shown, last_id


def _follow(api: str, headers: dict[str, str], answer_id: str, last_id: str) -> list[str]:
    """The events of following the answer on `api` from `last_id`: "delta:<text>" or a name."""
    events, event = [], ""
    with httpx.stream(
        "GET",
        f"{api}/api/v1/messages/{answer_id}/stream",
        headers={**headers, "Last-Event-ID": last_id},
        timeout=30,
    ) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("event: "):
                event = line.removeprefix("event: ")
            elif line.startswith("data: "):
                data = json.loads(line.removeprefix("data: "))
                events.append(f"delta:{data['text']}" if event == "delta" else event)
    return events


def test_an_answer_written_by_one_api_process_is_followed_and_stopped_on_the_other(
    cluster: tuple[dict[str, Process], Path], scripted_llm: ScriptedLLM
) -> None:
    processes, _ = cluster
    api1, api2 = str(processes["api1"].url), str(processes["api2"].url)
    email = f"reader-{uuid.uuid4().hex[:8]}@example.com"
    httpx.post(
        f"{api1}/api/v1/auth/register", json={"email": email, "password": PASSWORD}, timeout=30
    )
    headers = _token(api1, email)
    slow = Reply(content=" ".join(WORDS), piece_delay_seconds=0.1)
    scripted_llm.reset()
    scripted_llm.script(slow, slow)

    # Written on api1, read there up to a point, then followed on api2 from that point.
    answer_id, shown, last_id = _ask_and_leave(api1, headers, deltas=3)
    events = _follow(api2, headers, answer_id, last_id)
    assert events[0] == "meta" and events[-1] == "done"
    rest = "".join(event.removeprefix("delta:") for event in events if event.startswith("delta:"))
    assert shown + rest == " ".join(WORDS)

    # Written on api1, stopped from api2: kept as far as it got.
    answer_id, _, _ = _ask_and_leave(api1, headers, deltas=2)
    stopped = httpx.post(f"{api2}/api/v1/messages/{answer_id}/stop", headers=headers, timeout=30)
    assert stopped.status_code == 204, processes["api2"].output()
    chats = httpx.get(f"{api2}/api/v1/chats", headers=headers, timeout=10).json()["items"]
    listed = httpx.get(
        f"{api2}/api/v1/chats/{chats[0]['id']}/messages", headers=headers, timeout=10
    ).json()["items"]
    answer = listed[-1]
    assert answer["id"] == answer_id and answer["status"] == "complete"
    assert answer["meta"]["stopped"] is True
    assert 2 <= len(answer["content"].split()) < len(WORDS)
