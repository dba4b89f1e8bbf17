"""Korean particles that fit the word before them.

A Korean template writes a particle that depends on the sound a value ends with as both forms, the way a form
letter would (``{dose}은(는)``, ``{value}(으)로``); :func:`words.say` puts the one that fits the value in its place
(:func:`resolve`). A number ends as it is read: 2.08 is "이 점 영팔", so "2.08은"; 10 is "십", 100 "백". A value
whose reading is unknown (a word in Latin letters, a path) is read by its last letter's name, as an abbreviation
is (GPU "지피유"); the templates put no particle after such values at all (tests/test_words.py).
"""

from __future__ import annotations

import re

# both forms as the templates write them: (after a final consonant, after a vowel); (으)로 also takes 로 after ㄹ
PAIRS: dict[str, tuple[str, str]] = {
    "은(는)": ("은", "는"), "는(은)": ("은", "는"),
    "이(가)": ("이", "가"), "가(이)": ("이", "가"),
    "을(를)": ("을", "를"), "를(을)": ("을", "를"),
    "과(와)": ("과", "와"), "와(과)": ("과", "와"),
    "(으)로": ("으로", "로"),
    "(이)라": ("이라", "라"),
}
PAIR_RE = re.compile("|".join(re.escape(p) for p in PAIRS))

VOWEL, CONSONANT, RIEUL = "vowel", "consonant", "rieul"  # how a word ends: no final, a final, the final ㄹ
_DIGITS = (CONSONANT, RIEUL, VOWEL, CONSONANT, VOWEL, VOWEL, CONSONANT, RIEUL, RIEUL, VOWEL)  # 영 일 이 삼 사 오 육 칠 팔 구
_TENS = (CONSONANT, CONSONANT, CONSONANT)  # 십, 백, 천
_MYRIADS = (CONSONANT, CONSONANT, VOWEL, CONSONANT)  # 만, 억, 조, 경
_LETTERS = {"l": RIEUL, "r": RIEUL, "m": CONSONANT, "n": CONSONANT}  # 엘 알 엠 엔; every other letter's name ends open
_CLOSING = "\"'”’)]}」』》 \t"
_NUMBER = re.compile(r"(\d[\d,]*)(?:\.(\d+))?$")


def ending(text: str) -> str | None:
    """How ``text`` ends when read aloud: VOWEL, CONSONANT or RIEUL; None when it ends in no letter or digit."""
    text = str(text).rstrip(_CLOSING)
    if not text:
        return None
    last = text[-1]
    if "가" <= last <= "힣":
        final = (ord(last) - ord("가")) % 28
        return VOWEL if final == 0 else RIEUL if final == 8 else CONSONANT
    if last == "%":  # 퍼센트
        return VOWEL
    number = _NUMBER.search(text)
    if number:
        whole, fraction = number.group(1).replace(",", ""), number.group(2)
        if fraction:  # the digits after the point are read one by one
            return _DIGITS[int(fraction[-1])]
        return _whole_number(whole)
    if last.isascii() and last.isalpha():
        return _LETTERS.get(last.lower(), VOWEL)
    return None


def _whole_number(digits: str) -> str:
    """The last word of a whole number read in Korean: its last digit, else the place of its trailing zeros."""
    zeros = len(digits) - len(digits.rstrip("0"))
    if zeros == 0 or zeros == len(digits):  # 7 "칠", 0 "영"
        return _DIGITS[int(digits[-1])]
    if zeros % 4:
        return _TENS[zeros % 4 - 1]
    return _MYRIADS[min(zeros // 4, len(_MYRIADS)) - 1]


def josa(value: object, pair: str) -> str:
    """The particle of ``pair`` (a key of :data:`PAIRS`, e.g. "은(는)") that fits after ``value``."""
    after_consonant, after_vowel = PAIRS[pair]
    sound = ending(str(value))
    if pair == "(으)로":
        return after_consonant if sound == CONSONANT else after_vowel
    return after_consonant if sound in (CONSONANT, RIEUL) else after_vowel


_FIELD = re.compile(r"\{(\w+)(?:![rsa])?(?::[^{}]*)?\}([\"'”’)]*)(" + PAIR_RE.pattern + ")")


def resolve(template: str, values: dict[str, object]) -> str:
    """``template`` (Korean, before formatting) with each particle pair after a ``{field}`` (and any closing
    quote) replaced by the form that fits that field's formatted value; a pair after anything else stays."""
    def one(m: re.Match[str]) -> str:
        field, closing, pair = m.group(1), m.group(2), m.group(3)
        if field not in values:
            return m.group(0)
        spec = m.group(0)[: m.group(0).index("}") + 1]
        return spec + closing + josa(spec.format(**{field: values[field]}), pair)

    return _FIELD.sub(one, template)
