"""How a long reply is cut into the messages that carry it: within the limit, nothing lost, at the
pause a reader expects (paragraph, line, sentence, word), never inside a character."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from switchboard.routing.parts import split_text, utf16_length


def visible(text: str) -> str:
    return re.sub(r"\s", "", text)


WORDS = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=40)
PIECES = st.lists(
    st.one_of(
        WORDS, st.sampled_from([" ", "\n", "\n\n", ". ", "! ", "? ", "😀", "é", "e\u0301", "👨\u200d👩\u200d👧"])
    ),
    max_size=200,
)


@settings(max_examples=300, deadline=None)
@given(pieces=PIECES, limit=st.integers(min_value=2, max_value=200))
def test_every_part_fits_none_is_empty_and_nothing_but_whitespace_at_a_cut_is_lost(
    pieces: list[str], limit: int
) -> None:
    text = "".join(pieces)

    parts = split_text(text, limit)

    assert all(0 < utf16_length(part) <= limit for part in parts)
    assert all(part == part.strip() for part in parts)
    assert visible("".join(parts)) == visible(text)
    assert split_text(text, limit) == parts  # the same reply always gives the same parts


def test_a_reply_that_fits_is_one_part_trimmed() -> None:
    assert split_text("  Olá, tudo bem?\n", 4096) == ["Olá, tudo bem?"]
    assert split_text(" \n\t ", 4096) == []


def test_paragraphs_are_kept_whole_and_packed_while_they_fit() -> None:
    paragraphs = ["a" * 30, "b" * 30, "c" * 30, "d" * 30]

    assert split_text("\n\n".join(paragraphs), 70) == ["a" * 30 + "\n\n" + "b" * 30, "c" * 30 + "\n\n" + "d" * 30]


def test_a_paragraph_too_long_for_a_part_is_cut_at_sentences_then_words() -> None:
    sentence = "Esta frase tem seis palavras aqui."  # 34 characters
    paragraph = " ".join([sentence] * 3)

    parts = split_text(f"{paragraph}\n\nFim.", 70)

    assert parts == [f"{sentence} {sentence}", f"{sentence}\n\nFim."]
    assert split_text("palavra " * 10, 20) == [
        "palavra palavra",
        "palavra palavra",
        "palavra palavra",
        "palavra palavra",
        "palavra palavra",
    ]


def test_closing_quotes_stay_with_their_sentence() -> None:
    assert split_text('Ele disse: "Volto já." Depois saiu.', 25) == ['Ele disse: "Volto já."', "Depois saiu."]


def test_cjk_sentences_are_cut_after_their_end_mark_without_a_space() -> None:
    assert split_text("这是第一句。这是第二句\uff01", 7) == ["这是第一句。", "这是第二句\uff01"]


def test_a_word_longer_than_a_part_is_cut_at_the_limit_but_never_inside_a_surrogate_pair_or_before_an_accent() -> None:
    link = "https://example.com/" + "x" * 30

    assert [len(part) for part in split_text(link, 20)] == [20, 20, 10]
    assert split_text("😀" * 3, 5) == ["😀😀", "😀"]  # 2 code units each
    assert split_text("abcde\u0301f", 5) == ["abcd", "e\u0301f"]


def test_a_9000_character_reply_leaves_in_three_cloud_api_messages() -> None:
    paragraph = ("Obrigado pelo contato. Seguem os detalhes do seu pedido. " * 20).strip()
    text = "\n\n".join([paragraph] * 8)
    assert len(text) > 9000

    parts = split_text(text, 4096)

    assert len(parts) == 3 and all(utf16_length(part) <= 4096 for part in parts)
    assert all(part.endswith("pedido.") for part in parts)  # each cut at a paragraph's end


def test_a_limit_below_one_character_is_refused() -> None:
    with pytest.raises(ValueError):
        split_text("abc", 1)
