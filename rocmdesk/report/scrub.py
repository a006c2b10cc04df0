"""Pure text scrubbers for support bundles: secrets, addresses and personal data out of kept text.

Each scrubber takes a text and a :class:`collections.Counter` and returns the text with every match
replaced by a placeholder, counting replacements by kind (``capture --dry-run`` and the manifest show
the counts, never the values). What is matched, and why it can be replaced without changing the
diagnosis:

* credentials in URLs (``https://__token__:glpat-…@host``, ``git+https://ghp_…@github.com``):
  the user-info part goes, scheme, host and path stay (index URLs are compared by host);
* secrets by name (``OPENAI_API_KEY=…``, ``--api-key …``, ``"token": "…"``, ``Authorization: Bearer``)
  and by shape (``sk-``, ``hf_``, ``ghp_``/``github_pat_``, ``glpat-``, Slack, AWS access and secret
  keys, JWTs, long high-entropy tokens): no check reads a secret's value;
* IPv4/IPv6 and MAC addresses (loopback and unspecified kept): replaced by documentation addresses,
  the same address always by the same placeholder inside one bundle;
* e-mail addresses and the person named in package metadata (dpkg ``Maintainer:``, Python
  ``Author:``/``Maintainer:``, pyproject ``authors``/``maintainers``);
* comments on kept lines of configuration files (:func:`comments`): masked, so a commented-out line
  is still commented out and line numbers and file sizes stay;
* host names where the text says they are one (:func:`host_contexts`: syslog prefixes, prompts,
  ``Linux <host> 6.8``, ``hostname: …``), however common the word.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable

SECRET = "<redacted>"
EMAIL = "user@example.invalid"
NAME = "<name>"

# -- credentials in URLs ---------------------------------------------------------------------------
# scheme://userinfo@host: userinfo is anything up to the last '@' before the host (no '/', space, quote)
_URL_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<info>[^\s/@'\"<>]+)@(?=[\w\[])")
# user names in URLs that carry nothing (ssh://git@github.com)
_HARMLESS_URL_USERS = frozenset({"git", "anonymous", "ftp"})


def url_credentials(text: str, counts: Counter) -> str:
    """``https://user:pass@host`` and ``https://TOKEN@host`` become ``https://<redacted>@host``."""
    if "://" not in text:
        return text

    def repl(m: re.Match) -> str:
        info = m.group("info")
        if info in _HARMLESS_URL_USERS or info == SECRET:
            return m.group(0)
        counts["url_credentials"] += 1
        return f"{m.group('scheme')}{SECRET}@"

    return _URL_USERINFO.sub(repl, text)


# -- secrets by name -----------------------------------------------------------------------------------
_SECRET_WORD = (r"(?:api[_-]?key|apikey|access[_-]?key|secret[_-]?key|private[_-]?key|client[_-]?secret|"
                r"secrets?|tokens?|passw(?:or)?d|passwd|pass|passphrase|auth|credentials?|session[_-]?id|cookie|"
                r"bearer)")
# a name with a secret word as one of its parts: OPENAI_API_KEY, HF_TOKEN, --api-key, db_password,
# AWS_SECRET_ACCESS_KEY (never inside a longer word: iommu.passthrough, Author, tokenizer)
_SECRET_NAME = rf"-{{0,2}}(?:[A-Za-z0-9]+[_.-])*{_SECRET_WORD}(?:[_.-][A-Za-z0-9]+)*"
# NAME=value / NAME: value / "NAME": "value" / --NAME value (value: up to a blank, quote, ';', '&', ',')
_NAMED_VALUE = re.compile(
    rf"(?P<name>(?<![A-Za-z0-9_.-]){_SECRET_NAME})(?![A-Za-z0-9])(?P<sep>\"?\s*[=:]\s*\"?|'?\s*[=:]\s*'?|\s+)"
    r"(?P<value>[^\s\"'`;&,)}\]]+)",
    re.IGNORECASE)
# words that end a flag's value position: '--token' followed by another option is no value
_NOT_A_VALUE = re.compile(r"^(?:-|<redacted>$|\$|true$|false$|none$|null$|yes$|no$|0$|1$)", re.IGNORECASE)
_AUTH_HEADER = re.compile(r"(?i)\b(authorization\s*[:=]\s*(?:bearer|basic|token)?\s*)([A-Za-z0-9._~+/=-]{8,})")


def named_secrets(text: str, counts: Counter) -> str:
    """Values of options and variables whose name says secret (``--api-key X``, ``HF_TOKEN=X``)."""
    text = _AUTH_HEADER.sub(lambda m: _count(counts, "secrets_by_name", m.group(1) + SECRET), text)

    def repl(m: re.Match) -> str:
        sep, value = m.group("sep"), m.group("value")
        if _NOT_A_VALUE.match(value):
            return m.group(0)
        if sep.isspace() and not m.group("name").startswith("-"):
            return m.group(0)  # "token budget", "pass the": a name followed by a word is prose
        if sep.strip() in (":", '":', "':") and not _looks_secret_value(value):
            return m.group(0)  # "Passwords: none set", YAML-ish prose: only token-like values go
        return f"{m.group('name')}{sep}{SECRET}"

    out = _NAMED_VALUE.sub(lambda m: _counted(counts, "secrets_by_name", m, repl), text)
    return out


def _looks_secret_value(value: str) -> bool:
    return len(value) >= 8 and any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


# -- secrets by shape -------------------------------------------------------------------------------------
_TOKEN_SHAPES = re.compile(
    r"(?<![A-Za-z0-9_-])(?:"
    r"sk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_-]{16,}"  # OpenAI, Anthropic, Stripe-style
    r"|hf_[A-Za-z0-9]{20,}"  # Hugging Face
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"  # GitHub
    r"|glpat-[A-Za-z0-9_-]{16,}|gl(?:dt|rt|ptt|cbt|imt)-[A-Za-z0-9_-]{16,}"  # GitLab
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"  # Slack
    r"|(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}"  # AWS access key ids
    r"|AIza[A-Za-z0-9_-]{35}"  # Google API keys
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"  # JWT
    r"|npm_[A-Za-z0-9]{30,}|pypi-[A-Za-z0-9_-]{40,}"  # package registries
    r")(?![A-Za-z0-9_-])")
# Base64/base64url runs long enough to be a key (an AWS secret key is 40 characters, with '/' and '+').
_LONG_TOKEN = re.compile(r"(?<![A-Za-z0-9+/_=.-])[A-Za-z0-9+/_-]{32,}={0,2}(?![A-Za-z0-9+/_=-])")
MIN_TOKEN_ENTROPY = 4.0  # bits per character; English words and paths stay well below


def token_shapes(text: str, counts: Counter) -> str:
    """Well-known token formats, and long high-entropy base64 runs of mixed case and digits."""
    text = _TOKEN_SHAPES.sub(lambda m: _count(counts, "tokens", SECRET), text)
    return _LONG_TOKEN.sub(lambda m: _count(counts, "tokens", SECRET) if high_entropy(m.group(0)) else m.group(0),
                           text)


def high_entropy(value: str) -> bool:
    """A random-looking token: upper and lower case and digits, no path shape, Shannon entropy high.

    Hex digests (sha256 of a module, a srcversion) are all one case and stay: they are compared.
    """
    if not (any(c.isupper() for c in value) and any(c.islower() for c in value) and any(c.isdigit() for c in value)):
        return False
    if value.count("/") > 3 or value.count("-") > 4 or value.count("_") > 4:
        return False  # a path or an identifier_with_words, not a key
    freq = Counter(value)
    entropy = -sum(n / len(value) * math.log2(n / len(value)) for n in freq.values())
    return entropy >= MIN_TOKEN_ENTROPY


# -- network addresses ----------------------------------------------------------------------------------
_IPV4 = re.compile(r"(?<![\w.:-])((?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3})"
                   r"(?:/\d{1,2})?(?![\w.-]*\d)(?!\.\w)")
_KEEP_IPV4 = frozenset({"0.0.0.0", "127.0.0.1", "255.255.255.255", "255.255.255.0"})
_HEX4 = r"[0-9A-Fa-f]{1,4}"
_IPV6 = re.compile(
    rf"(?<![\w:.])("
    rf"(?:{_HEX4}:){{7}}{_HEX4}"  # full form
    rf"|(?:{_HEX4}:){{1,6}}(?::{_HEX4}){{1,6}}"  # a::b, a:b::c:d
    rf"|(?:{_HEX4}:){{1,7}}:"  # a:b::
    rf"|::(?:{_HEX4}:){{0,6}}{_HEX4}"  # ::1, ::ffff:a:b
    rf")(?:%[\w.-]+)?(?:/\d{{1,3}})?(?![\w:])")
_KEEP_IPV6 = frozenset({"::1", "::"})
_MAC = re.compile(r"(?<![0-9A-Fa-f:-])((?:[0-9A-Fa-f]{2}([:-]))(?:[0-9A-Fa-f]{2}\2){4}[0-9A-Fa-f]{2})"
                  r"(?![0-9A-Fa-f:-])")


class Placeholders:
    """Stable placeholders per bundle: the same address gets the same documentation address."""

    def __init__(self) -> None:
        self.ipv4: dict[str, str] = {}
        self.ipv6: dict[str, str] = {}
        self.mac: dict[str, str] = {}

    def for_ipv4(self, value: str) -> str:
        if value not in self.ipv4:
            n = len(self.ipv4)
            self.ipv4[value] = f"192.0.2.{n % 254 + 1}" if n < 254 else f"198.51.100.{(n - 254) % 254 + 1}"
        return self.ipv4[value]

    def for_ipv6(self, value: str) -> str:
        if value not in self.ipv6:
            self.ipv6[value] = f"2001:db8::{len(self.ipv6) + 1:x}"
        return self.ipv6[value]

    def for_mac(self, value: str) -> str:
        if value not in self.mac:
            n = len(self.mac) + 1
            self.mac[value] = f"02:00:00:00:{n >> 8 & 0xff:02x}:{n & 0xff:02x}"
        return self.mac[value]


def addresses(text: str, counts: Counter, places: Placeholders) -> str:
    """IPv4, IPv6 and MAC addresses to documentation placeholders (loopback and 0.0.0.0 kept)."""
    if ":" in text:
        text = _MAC.sub(lambda m: _count(counts, "mac_addresses", places.for_mac(m.group(1).lower())), text)

        def v6(m: re.Match) -> str:
            value = m.group(1)
            if value in _KEEP_IPV6 or not _plausible_ipv6(value):
                return m.group(0)
            return _count(counts, "ip_addresses", places.for_ipv6(value.lower()))

        text = _IPV6.sub(v6, text)
    if "." in text:
        def v4(m: re.Match) -> str:
            value = m.group(1)
            if value in _KEEP_IPV4 or value.startswith(("127.", "0.")) or _version_context(m):
                return m.group(0)
            return _count(counts, "ip_addresses", places.for_ipv4(value) + m.group(0)[len(value):])

        text = _IPV4.sub(v4, text)
    return text


def _plausible_ipv6(value: str) -> bool:
    """Times (10:12:33), C++ scopes (std::vec) and ratios are not addresses."""
    groups = [g for g in value.split(":") if g]
    if "::" not in value and len(groups) != 8:
        return False
    if all(g.isdigit() and len(g) <= 2 for g in groups):
        return False  # 12:30::45-like
    return any(len(g) >= 3 for g in groups) or value.startswith("::") or len(groups) >= 3


_VERSION_BEFORE = re.compile(r"(?i)(?:version|ver|v|release|firmware|fw|driver|vbios)[\s:=_-]*$")


def _version_context(m: re.Match) -> bool:
    """``Version: 1.2.3.4``, ``v10.0.0.1``, ``fw 1.0.0.59``: a dotted version, not an address."""
    before = m.string[max(0, m.start() - 24):m.start()]
    return bool(_VERSION_BEFORE.search(before))


# -- personal data --------------------------------------------------------------------------------------
_EMAIL = re.compile(r"(?<![\w.+-])[A-Za-z0-9][A-Za-z0-9._%+-]*@(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,}(?![\w-])")
# RFC 822-style metadata fields that name a person (dpkg status, Python METADATA, conda records)
_PERSON_FIELD = re.compile(r"(?im)^((?:Maintainer|Original-Maintainer|XSBC-Original-Maintainer|Uploaders|"
                           r"Changed-By|Author|Author-email|Maintainer-email)\s*:[ \t]*)(\S.*)$")
# pyproject.toml / setup.cfg person tables: name = "…" / email = "…" inside authors/maintainers
_TOML_PERSON = re.compile(r"(?im)^(\s*(?:authors|maintainers)\s*=\s*)(.+)$")
_TOML_NAME_VALUE = re.compile(r"""((?:name|email)\s*=\s*)(["'])(.*?)\2""")
_TOML_STRING = re.compile(r"""(["'])(.*?)\1""")


def emails(text: str, counts: Counter) -> str:
    if "@" not in text:
        return text
    return _EMAIL.sub(lambda m: m.group(0) if m.group(0) == EMAIL else _count(counts, "email_addresses", EMAIL), text)


def person_fields(text: str, counts: Counter) -> str:
    """The person named in package metadata fields (``Maintainer: Jane Doe <jane@…>``)."""
    def repl(m: re.Match) -> str:
        if m.group(2).strip() in (NAME, EMAIL):
            return m.group(0)
        return _count(counts, "personal_names", m.group(1) + NAME)

    return _PERSON_FIELD.sub(repl, text)


def pyproject_people(text: str, counts: Counter) -> str:
    """``authors``/``maintainers`` of a pyproject.toml: names and e-mails inside the array, over
    as many lines as it spans (line numbers stay; the dependencies the checks read are untouched)."""
    lines = text.split("\n")
    depth = 0
    for i, line in enumerate(lines):
        m = _TOML_PERSON.match(line)
        if depth == 0 and not m:
            continue
        start = m.end(1) if (m and depth == 0) else 0
        head, body = line[:start], line[start:]
        body = _TOML_NAME_VALUE.sub(lambda mm: _count(counts, "personal_names", f"{mm.group(1)}{mm.group(2)}"
                                                                                f"{NAME}{mm.group(2)}"), body)
        if "name" not in body and "email" not in body:
            body = _TOML_STRING.sub(lambda mm: _count(counts, "personal_names", f"{mm.group(1)}{NAME}{mm.group(1)}")
                                    if mm.group(2) != NAME else mm.group(0), body)
        lines[i] = head + body
        depth += _bracket_balance(body)
        if depth <= 0:
            depth = 0
    return "\n".join(lines)


def _bracket_balance(text: str) -> int:
    stripped = _TOML_STRING.sub("", text)
    return stripped.count("[") + stripped.count("{") - stripped.count("]") - stripped.count("}")


# -- comments ---------------------------------------------------------------------------------------------


def comments(text: str, counts: Counter, trailing: bool = True) -> str:
    """Comment text masked in configuration lines (:func:`mask`): the ``#``, blanks and length stay.

    Length stays because a bundle's initramfs check compares a modprobe.d file's size with the image's
    copy; ``amdgpu`` stays because that check looks only at files that mention it. A line whose first
    non-blank character is ``#`` is a comment, with the lines a final backslash joins to it (kmod);
    ``trailing``: a ``#`` after a blank and outside quotes also starts one (shell, Xorg, pip, TOML;
    not kmod, whose options take a mid-line ``#`` as a word, and not udev).
    """
    lines = text.split("\n")
    continued = False
    for i, line in enumerate(lines):
        if continued:  # the rest of a comment joined by a trailing backslash
            continued = line.endswith("\\")
            lines[i] = _masked(line, 0, counts)
            continue
        stripped = line.lstrip()
        if stripped.startswith("#"):
            continued = line.endswith("\\")
            lines[i] = _masked(line, len(line) - len(stripped) + 1, counts)
        elif trailing and "#" in line:
            cut = _trailing_comment(line)
            if cut is not None:
                lines[i] = _masked(line, cut + 1, counts)
    return "\n".join(lines)


_KEPT_IN_COMMENTS = re.compile(r"amdgpu|\s+|\\$")


def mask(text: str) -> str:
    """Every character but blanks, ``amdgpu`` and a final backslash replaced by ``x``."""
    out, pos = [], 0
    for m in _KEPT_IN_COMMENTS.finditer(text):
        out.append("x" * (m.start() - pos))
        out.append(m.group(0))
        pos = m.end()
    out.append("x" * (len(text) - pos))
    return "".join(out)


def _masked(line: str, start: int, counts: Counter) -> str:
    body = line[start:]
    masked = mask(body)
    if masked != body:
        counts["comments"] += 1
    return line[:start] + masked


def same_length_lines(original: str, scrubbed: str) -> str:
    """``scrubbed`` with each line padded (blanks) or cut back to the original line's length, where the
    line count is the same: files whose size a check compares (modprobe.d) keep their size."""
    old, new = original.split("\n"), scrubbed.split("\n")
    if len(old) != len(new):
        return scrubbed
    return "\n".join(n[: len(o)] if len(n) > len(o) else n + " " * (len(o) - len(n))
                     for o, n in zip(old, new, strict=True))


def _trailing_comment(line: str) -> int | None:
    """Index of a ``#`` that starts a trailing comment (after a blank, outside quotes), or None."""
    single = double = False
    for index, char in enumerate(line):
        if char == "'" and not double:
            single = not single
        elif char == '"' and not single:
            double = not double
        elif char == "#" and not single and not double and index > 0 and line[index - 1] in " \t":
            return index
    return None


# -- host names in telling places -------------------------------------------------------------------------
# syslog/kern.log and journalctl "short" lines: "Dec  1 10:00:00 HOST kernel: ..." / ISO timestamps
_SYSLOG_PREFIX = re.compile(
    r"(?m)^((?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?)"
    r" )([A-Za-z0-9][A-Za-z0-9._-]{0,62})(?= [\w./@-]+(?:\[\d+\])?: )")


def log_hostnames(text: str) -> set[str]:
    """Host names in the prefixes of syslog-style lines (older names of the machine included)."""
    return {m.group(2) for m in _SYSLOG_PREFIX.finditer(text)}


def host_contexts(hosts: Iterable[str]) -> re.Pattern | None:
    """Where a host name, common word or not, can only be the machine (one pattern, compiled once)."""
    names = sorted({h for h in hosts if h}, key=len, reverse=True)
    if not names:
        return None
    alt = "|".join(map(re.escape, names))
    return re.compile("|".join((
        rf"(?<=@)({alt})(?![A-Za-z0-9-])",  # user@host, prompts "[user@host dir]$"
        rf"(?<![A-Za-z0-9_.-])({alt})(?=\.(?:local|lan|home|localdomain|internal)\b)",
        rf"(?<=HOSTNAME=)({alt})(?![A-Za-z0-9-])",
        rf"(?<=Linux )({alt})(?= \d)",  # uname -a, Xorg's "Current Operating System: Linux host 6.8.0"
        rf"^({alt})(?=:~?[/\w.-]*[$#] )",  # a bare prompt "host:~$ "
        rf"(?:(?<=hostname: )|(?<=hostname = )|(?<=hostname=)|(?<=nodename: )|(?<=host name: ))({alt})\b",
        rf"(?:(?<=^[A-Z][a-z]{{2}} [ \d]\d \d\d:\d\d:\d\d )|(?<=^\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d\d\d )"
        rf"|(?<=^\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d ))({alt})(?= [\w./@-]+(?:\[\d+\])?: )",
    )), re.IGNORECASE | re.MULTILINE)


# -- machine and boot ids ---------------------------------------------------------------------------------
_HEX32_CONTEXT = re.compile(
    r"(?i)(?:(?<=_MACHINE_ID=)|(?<=_BOOT_ID=)|(?<=machine-id )|(?<=machine_id=)|(?<=boot_id=)|(?<=Boot ID: )"
    r"|(?<=Machine ID: )|(?<=-- Boot )|(?<=initrd=\\)|(?<=initrd=/)|(?<=[\\/]loader[\\/]entries[\\/]))"
    r"([0-9a-f]{32})(?![0-9a-f])")


def machine_ids(text: str, counts: Counter, hashed: dict[str, str], shaped: object) -> str:
    """32-hex machine and boot ids where the text says they are one (journal fields, the systemd-boot
    ``initrd=\\<machine-id>\\…`` path); ``shaped`` hashes a value (the bundle's salted hash)."""
    def repl(m: re.Match) -> str:
        value = m.group(1).lower()
        if value not in hashed:
            hashed[value] = shaped(value)  # type: ignore[operator]
        return _count(counts, "machine_ids", hashed[value])

    return _HEX32_CONTEXT.sub(repl, text)


# -- all of it ------------------------------------------------------------------------------------------


def secrets_and_addresses(text: str, counts: Counter, places: Placeholders) -> str:
    """Everything here that needs no knowledge of the machine, in a safe order: URLs before
    named values (a URL may sit in a ``--index-url`` value), shapes last."""
    text = url_credentials(text, counts)
    text = named_secrets(text, counts)
    text = token_shapes(text, counts)
    text = person_fields(text, counts)
    text = emails(text, counts)
    return addresses(text, counts, places)


def _count(counts: Counter, kind: str, replacement: str) -> str:
    counts[kind] += 1
    return replacement


def _counted(counts: Counter, kind: str, m: re.Match, repl) -> str:
    out = repl(m)
    if out != m.group(0):
        counts[kind] += 1
    return out
