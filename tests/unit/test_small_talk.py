"""Small talk, which the built-in demo model may answer, told by a fixed rule."""

from __future__ import annotations

import pytest

from docchat.answers.small_talk import is_small_talk


@pytest.mark.parametrize(
    "message",
    [
        "hello",
        "Hello!",
        "Thanks so much!",
        "thank you",
        "Hi, how are you?",
        "hello docchat",
        "Danke schön",
        "merci beaucoup",
        "¡Hola!",
        "你好",
        "good night",
    ],
)
def test_greetings_and_thanks_are_small_talk(message: str) -> None:
    assert is_small_talk(message)


@pytest.mark.parametrize(
    "message",
    [
        "What is the capital of France?",
        "Hello, who won the 1998 World Cup?",
        "thanks, and at what temperature does mercury boil?",
        "so much",
        "",
        "hi " * 20,
    ],
)
def test_questions_are_not_small_talk(message: str) -> None:
    assert not is_small_talk(message)
