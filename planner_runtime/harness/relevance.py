"""Lexical relevance of short documents (skills, app domains) to a goal.

Words are lower-cased, stop words dropped and the rest stemmed with the Snowball English
stemmer, so "texts", "texting" and "text" meet, as do "booked" and "booking" (but not "set" and
"settings"). A document's score
is the sum, over the goal's words it contains, of the word's rarity across the documents
(``log(1 + N / (1 + df))``): a word every document shares says little, a rare one a lot.
"""

from __future__ import annotations

import functools
import math
import re
import threading
from typing import Sequence

import snowballstemmer

_WORD = re.compile(r"[a-z0-9]+")
STOP_WORDS = frozenset(
    "a an the to of for on in my me i and or is it at by with from this that be do does can you your "
    "please what who when how up out as are was will would should could there their then than".split()
)


# Words the stemmer conflates with a different word that matters here: Snowball makes "settings"
# "set", so "Set an alarm" would be a Settings goal.
STEM_EXCEPTIONS = {"setting": "setting", "settings": "setting"}

_local = threading.local()  # a Snowball stemmer keeps its word in itself: one per thread


@functools.lru_cache(maxsize=8192)
def _stem(word: str) -> str:
    if word in STEM_EXCEPTIONS:
        return STEM_EXCEPTIONS[word]
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = snowballstemmer.stemmer("english")
    return stemmer.stemWord(word)


def words(text: str) -> list[str]:
    """The stemmed content words of ``text``, in order."""
    return [_stem(w) for w in _WORD.findall(text.lower()) if w not in STOP_WORDS]


def terms(text: str) -> set[str]:
    """The stemmed content words of ``text``."""
    return set(words(text))


def names_any(said: Sequence[str], phrases: Sequence[str]) -> bool:
    """Whether the words ``said`` (:func:`words` of a text, taken once by the caller) hold one of
    ``phrases`` as a run ("text messages" in "send it as a text message"; "address book" needs both
    words, side by side)."""
    present = set(said)
    for phrase in phrases:
        wanted = words(phrase)
        if wanted and present.issuperset(wanted) and any(
            list(said[i : i + len(wanted)]) == wanted for i in range(len(said) - len(wanted) + 1)
        ):
            return True
    return False


def scores(docs: Sequence[str | Sequence[tuple[str, float]]], query: str) -> list[float]:
    """One score per document in ``docs`` for ``query``; 0 when they share no word.

    A document is a text, or weighted fields ``[(text, weight), ...]`` (a name counting more
    than a description): a word scores its rarity times the weight of the best field holding it."""
    bags: list[dict[str, float]] = []
    for doc in docs:
        bag: dict[str, float] = {}
        for text, field_weight in [(doc, 1.0)] if isinstance(doc, str) else doc:
            for word in terms(text):
                bag[word] = max(bag.get(word, 0.0), field_weight)
        bags.append(bag)
    wanted = terms(query)
    n = len(bags)
    rarity = {w: math.log(1 + n / (1 + sum(w in b for b in bags))) for w in wanted}
    return [sum(rarity[w] * bag[w] for w in wanted if w in bag) for bag in bags]
