"""Long conversations: does a late question still see the early turn it goes back to?

    .venv/bin/python -m bench.eval_long_conversations [--chats 40] [--pairs 10]

The set is built from squad-dev, deterministic: a *callback* is two questions of one paragraph
where the second one's answer is in the sentence that answers the first. Each 50-turn chat asks
10 callbacks' first questions (turns 1-10), then 30 questions about other articles (11-40),
then the 10 second questions in another order (41-50): each late question goes back to one
early turn. An answer is the paragraph's sentence that holds the gold answer (what a grounded
answer says), as the chat would store it.

For every late question, what reaches the prompt is built by the service's own code
(`chats.history`, `chats.summaries`) and searched for the late question's gold answer:
- *last N*: the plain window of the last N exchanges (before issue 42);
- *relevance*: the last N exchanges and up to `history.EARLIER_RELATED` earlier ones related
  to the question, chosen by `history.Relevance`
  (MiniLM embeddings + shared terms; real model, real cache);
- *digest*: the built-in demo model's summary of everything before the last N exchanges;
- *relevance + digest*: what the prompt now carries with the demo model.
A control counts late questions that go back to nothing (turns 41-50 of a chat whose early
turns are about other articles): how often relevance still brings an early turn in.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import random
import re
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from bench.common import machine, median, percentile, table
from docchat.chats import history, summaries
from docchat.chats.models import Message, MessageRole, MessageStatus
from docchat.config import EmbeddingSettings, HistorySettings
from docchat.kit.tokens import CHARS_PER_TOKEN
from docchat.llm.embeddings import CachedVectors, local_embedder

SQUAD = Path(__file__).parent / "datasets" / "squad-dev"
TURNS_EARLY, TURNS_MIDDLE = 10, 30
_SENTENCES = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


@dataclass(frozen=True)
class Asked:
    question: str
    answers: tuple[str, ...]
    paragraph: str

    def reply(self, paragraphs: dict[str, str]) -> str | None:
        """The paragraph's sentence that holds an answer, as a grounded answer states it."""
        for sentence in _SENTENCES.split(paragraphs[self.paragraph]):
            if any(answer in sentence for answer in self.answers):
                return sentence + " [1]"
        return None


def _jsonl(path: Path) -> list[dict[str, object]]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


def load() -> tuple[dict[str, str], list[Asked]]:
    paragraphs = {str(e["_id"]): str(e["text"]) for e in _jsonl(SQUAD / "corpus.jsonl")}
    judged: dict[str, str] = {}
    for row in (SQUAD / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        query, paragraph, score = row.split("\t")
        if int(score) > 0:
            judged[query] = paragraph
    asked = []
    for entry in _jsonl(SQUAD / "queries.jsonl"):
        metadata = entry["metadata"]
        assert isinstance(metadata, dict)
        key = str(entry["_id"])
        if key in judged:
            answers = tuple(str(a) for a in metadata["answers"] if len(str(a)) > 1)
            asked.append(Asked(str(entry["text"]), answers, judged[key]))
    return paragraphs, [a for a in asked if a.answers and a.reply(paragraphs)]


def article(item: Asked) -> str:
    return item.paragraph.split("-")[0]


def words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def callbacks(paragraphs: dict[str, str], asked: list[Asked]) -> list[tuple[Asked, Asked]]:
    """(early, late) of one paragraph: the late answer is in the early reply, and the two
    questions are not the same question reworded (they share under half their words)."""
    by_paragraph: dict[str, list[Asked]] = defaultdict(list)
    for item in asked:
        by_paragraph[item.paragraph].append(item)
    found = []
    for group in by_paragraph.values():
        for early, late in itertools.permutations(group, 2):
            reply = early.reply(paragraphs) or ""
            if set(late.answers) & set(early.answers):
                continue
            if not any(answer in reply for answer in late.answers):
                continue
            shared = words(early.question) & words(late.question)
            if len(shared) < 0.5 * len(words(late.question)):
                found.append((early, late))
                break  # one callback per paragraph
    return found


@dataclass
class Chat:
    turns: list[Asked]
    # Late turn index -> the early turn index it goes back to (None: the control).
    needs: dict[int, int | None]


def build_chats(
    paragraphs: dict[str, str], asked: list[Asked], count: int, seed: int = 42
) -> list[Chat]:
    rng = random.Random(seed)
    pairs = callbacks(paragraphs, asked)
    rng.shuffle(pairs)
    chats = []
    for number in range(count):
        chosen = pairs[number * TURNS_EARLY : (number + 1) * TURNS_EARLY]
        if len(chosen) < TURNS_EARLY:
            break
        articles = {article(early) for early, _ in chosen}
        others = [a for a in asked if article(a) not in articles]
        middle = rng.sample(others, TURNS_MIDDLE)
        late = list(range(TURNS_EARLY))
        rng.shuffle(late)
        turns = [early for early, _ in chosen] + middle + [chosen[i][1] for i in late]
        needs: dict[int, int | None] = {
            TURNS_EARLY + TURNS_MIDDLE + position: early for position, early in enumerate(late)
        }
        chats.append(Chat(turns, needs))
    # Controls: the same late questions after early turns about other articles.
    controls = []
    for chat in chats[: max(1, len(chats) // 4)]:
        late_turns = chat.turns[TURNS_EARLY + TURNS_MIDDLE :]
        articles = {article(item) for item in late_turns}
        others = [a for a in asked if article(a) not in articles]
        early_turns = rng.sample(others, TURNS_EARLY + TURNS_MIDDLE)
        controls.append(Chat(early_turns + late_turns, dict.fromkeys(chat.needs)))
    return chats + controls


def messages_of(chat: Chat, paragraphs: dict[str, str], upto: int) -> list[Message]:
    chat_id = uuid.uuid4()
    made: list[Message] = []
    for index, item in enumerate(chat.turns[:upto]):
        for role, content in (
            (MessageRole.user, item.question),
            (MessageRole.assistant, item.reply(paragraphs) or ""),
        ):
            made.append(
                Message(
                    chat_id=chat_id,
                    seq=len(made) + 1,
                    role=role,
                    content=content,
                    status=MessageStatus.complete,
                )
            )
        del index
    return made


def _holds(text: str, item: Asked) -> bool:
    return any(answer in text for answer in item.answers)


async def evaluate(chats: list[Chat], paragraphs: dict[str, str], pairs: int) -> None:
    settings = HistorySettings(_env_file=None)  # type: ignore[call-arg]
    embedder = local_embedder(EmbeddingSettings(_env_file=None))  # type: ignore[call-arg]
    relevance = history.Relevance(CachedVectors(embedder))
    chars, budget = settings.history_message_chars, settings.history_tokens
    digest_chars = settings.summary_tokens * CHARS_PER_TOKEN
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    first: list[float] = []  # a chat's first late question: its exchanges not embedded yet
    later: list[float] = []
    for chat in chats:
        kind = "callback" if next(iter(chat.needs.values())) is not None else "control"
        for turn, needed in chat.needs.items():
            exchanges = history.exchanges_of(messages_of(chat, paragraphs, turn))
            item = chat.turns[turn]
            window = exchanges[-pairs:]
            started = time.perf_counter()
            scores = await relevance.scores(item.question, exchanges)
            elapsed = (time.perf_counter() - started) * 1000
            (later if turn > min(chat.needs) else first).append(elapsed)
            chosen = history.choose(
                exchanges, scores, pairs=pairs, token_budget=budget, message_chars=chars
            )
            digest = summaries.digest(None, exchanges[:-pairs], limit_chars=digest_chars)
            shown = {
                f"last {pairs}": _text(window, chars),
                "relevance": _text(chosen, chars),
                "digest": digest,
                "relevance + digest": _text(chosen, chars) + "\n" + digest,
            }
            counts[kind]["questions"] += 1
            seqs = {exchange.seq for exchange in chosen}
            recent = {exchange.seq for exchange in window}
            counts[kind]["earlier turns brought in"] += len(seqs - recent)
            if needed is not None:
                counts[kind]["needed turn kept"] += exchanges[needed].seq in seqs
            for name, text in shown.items():
                counts[kind][name] += _holds(text, item)
    questions = counts["callback"]["questions"]
    callback_chats = sum(1 for chat in chats if next(iter(chat.needs.values())) is not None)
    rows = [
        [name, f"{100 * counts['callback'][name] / questions:.1f}%"]
        for name in (f"last {pairs}", "relevance", "digest", "relevance + digest")
    ]
    print(
        f"\n{callback_chats} chats of 50 turns, {questions} late questions going back to an "
        f"early turn; {machine()}"
    )
    print(table(["what reaches the prompt", "late answer's fact in the prompt"], rows))
    kept = counts["callback"]["needed turn kept"]
    print(f"\nrelevance kept the needed early turn whole: {100 * kept / questions:.1f}%")
    controls = counts["control"]["questions"]
    if controls:
        brought = counts["control"]["earlier turns brought in"]
        print(
            f"controls ({controls} late questions about nothing said before): {brought / controls:.2f}"
            f" turns from before the last {pairs} brought in per question"
        )
    for name, timings in (("a chat's first (none embedded)", first), ("later (cached)", later)):
        print(
            f"relevance of 40-49 exchanges, {name}: p50 {median(timings):.1f} ms, "
            f"p95 {percentile(timings, 95):.1f} ms"
        )


def _text(exchanges: list[history.Exchange], chars: int) -> str:
    return "\n".join(message["content"] for message in history.as_history(exchanges, chars))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chats", type=int, default=40)
    parser.add_argument("--pairs", type=int, default=10)
    options = parser.parse_args()
    paragraphs, asked = load()
    chats = build_chats(paragraphs, asked, options.chats)
    asyncio.run(evaluate(chats, paragraphs, options.pairs))


if __name__ == "__main__":
    main()
