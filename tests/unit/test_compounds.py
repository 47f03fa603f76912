"""German compounds indexed with their parts (issue 69: English questions over German
documents), split by wordfreq's counts as Koehn and Knight split them."""

from __future__ import annotations

from docchat.retrieval.compounds import parts, with_parts


def test_a_compound_is_cut_where_its_parts_are_most_common() -> None:
    assert parts("Baumeister", "de") == ("bau", "meister")
    assert parts("Einwohnerzahl", "de") == ("einwohner", "zahl")
    # A linking element is dropped from the first part, and ß kept as written.
    assert parts("Verkehrssicherheit", "de") == ("verkehr", "sicherheit")
    assert parts("Straßenbahnnetz", "de") == ("straßenbahn", "netz")


def test_a_word_more_common_whole_than_cut_stays_whole() -> None:
    for word in ("Erklärung", "Bevölkerung", "Brücke", "und"):
        assert parts(word, "de") == (), word


def test_only_german_is_split() -> None:
    assert parts("housekeeper", "en") == ()
    assert parts("Baumeister", None) == ()  # type: ignore[arg-type]


def test_the_parts_are_appended_to_the_indexed_text() -> None:
    text = "Ihr Baumeister war Konrad Kellmünz."
    indexed = with_parts(text, "de")
    assert indexed.startswith(text)
    assert {"bau", "meister"} <= set(indexed.split("\n", 1)[1].split())
    assert with_parts("The housekeeper was Ada.", "en") == "The housekeeper was Ada."
    assert with_parts("Die Brücke ist alt.", "de") == "Die Brücke ist alt."
