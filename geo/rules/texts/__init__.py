"""The texts ``geo`` generates (headline, key facts, NO2 labels), one catalogue per language.

Each catalogue (:mod:`.nl`, :mod:`.fr`, :mod:`.en`) is a plain ``MESSAGES`` dict: message id → format string
(``str.format`` fields). Dutch is the contract's language and the default; every catalogue has exactly the same
ids (a test checks it) and the same format fields. Data values from the upstreams never pass through here.
Plurals: ``<id>.one`` for 1, ``<id>.many`` otherwise (zero always has its own ``.none`` message).
"""

from __future__ import annotations

from importlib import import_module

LANGUAGES = ("nl", "fr", "en")  # supported, in the server's order of preference
DEFAULT = "nl"


class Catalogue:
    """The messages of one language.

    Examples
    --------
    >>> t = catalogue("en")
    >>> t("works.many", n=3, radius="2 km"), t.plural("transit", 1), t.decimal(25.04, 1)
    ('3 road works in progress within 2 km', '1 De Lijn detour', '25.0')
    >>> catalogue("fr").decimal(25.04, 1)
    '25,0'
    """

    __slots__ = ("lang", "messages")

    def __init__(self, lang: str, messages: dict):
        self.lang, self.messages = lang, messages

    def __call__(self, msgid: str, **fields) -> str:
        text = self.messages[msgid]
        return text.format(**fields) if fields else text

    def plural(self, msgid: str, count: int, **fields) -> str:
        """``<msgid>.one`` when ``count == 1``, else ``<msgid>.many``; ``count`` fills the field ``n``."""
        return self(f"{msgid}.{'one' if count == 1 else 'many'}", n=count, **fields)

    def decimal(self, x: float, digits: int) -> str:
        """``x`` with ``digits`` decimals and the language's decimal separator."""
        return f"{x:.{digits}f}".replace(".", self.messages["decimal.separator"])


_LOADED: dict[str, Catalogue] = {}


def catalogue(lang: str = DEFAULT) -> Catalogue:
    """The catalogue of a supported language (``ValueError`` otherwise); loaded on first use."""
    found = _LOADED.get(lang)
    if found is None:
        if lang not in LANGUAGES:
            raise ValueError(f"unsupported language {lang!r}: one of {', '.join(LANGUAGES)}")
        found = _LOADED[lang] = Catalogue(lang, import_module(f"{__name__}.{lang}").MESSAGES)
    return found
