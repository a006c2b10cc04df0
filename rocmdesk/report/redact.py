"""Redaction for support bundles: what identifies a person or a machine never leaves it.

Hostnames, user names and home folders become stable placeholders (``host1``, ``user1``,
``/home/user1``) in file contents *and* file names; serial numbers, unique ids and UUIDs are
replaced by a salted hash of the same shape (so a KFD ``unique_id`` still matches the sysfs one
inside the bundle, but cannot be traced back); the environment keeps only GPU-stack variables.

Where a name is replaced depends on how much it says on its own:

* A *distinctive* name (``alice``, ``ws-zorana-7``) is replaced wherever it stands between
  non-alphanumeric characters: ``/home/alice-data/``, ``alice@host``, ``alice.local``,
  ``alice_backup`` and ``alice render``; never inside a longer word (``malice``, ``alice2``).
* A name that is also a *common word* of this domain or of the machine (``amd``, ``gpu``,
  ``render``, ``video``, ``root``, a system group or account, anything under three letters) is
  replaced only where it can only be the person or the machine: home folders (``/home/amd``,
  ``/home/amd-data``), ``amd@host``, ``~amd``, ``USER=amd``, ``"user": "amd"``, ``amd.local``,
  and the name fields of ``/etc/passwd`` and ``/etc/group`` (see ``filters``). ``amdgpu``,
  ``amd-smi``, ``render:x:992:`` and ``Advanced Micro Devices`` stay as they are, so the
  diagnosis of the bundle reads the same groups, packages and modules as on the machine.

A hostname equal to a user name gets the user's placeholder where the context says "person"
(``alice@``, ``USER=alice``, passwd/group fields, home folders) and ``host1`` elsewhere.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import secrets
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from rocmdesk.host import HostRoot
from rocmdesk.report import scrub
from rocmdesk.telemetry.accounts import parse_group, parse_passwd, parse_proc_status
from rocmdesk.telemetry.parsers import bounded_int

log = logging.getLogger(__name__)

# Environment variables worth sharing: they steer the GPU stack (ROCm/ROCT-Thunk-Interface src/topology.c reads
# HSA_OVERRIDE_GFX_VERSION; ROCm docs conceptual/gpu-isolation for the *_VISIBLE_DEVICES).
KEEP_ENV_PREFIXES: tuple[str, ...] = (
    "HSA_", "HIP_", "ROCR_", "ROCM_", "HCC_", "CUDA_", "PYTORCH_", "TORCH_", "AMD_", "MIOPEN_",
    "ROCBLAS_", "HIPBLASLT_", "AMDGPU_", "RCCL_", "NCCL_",
)
# VIRTUAL_ENV / CONDA_PREFIX name the Python environment of a process started from an activated
# environment (argv[0] is then a bare "python"): the diagnosis finds the environment through them.
KEEP_ENV_NAMES: frozenset[str] = frozenset({"GPU_DEVICE_ORDINAL", "LD_LIBRARY_PATH", "HOME", "USER", "LOGNAME",
                                            "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV"})
# Their values are paths: kept, with home folders and user names redacted.
PATH_ENV_NAMES: frozenset[str] = frozenset({"LD_LIBRARY_PATH", "HOME", "VIRTUAL_ENV", "CONDA_PREFIX"})

# Account names that are never personal (system users and groups keep their names).
SYSTEM_UID_MAX = 999
NOBODY_UIDS = frozenset({65534, 4294967294})

UUID_RE = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
# Shortest identifier value worth hashing: short values (0, 1, a small id) identify nobody and
# replacing them everywhere would corrupt unrelated numbers.
MIN_ID_LEN = 6
# sysfs files that hold one unique id each (GPU serials and ids, XGMI hive and device ids, DMI serials)
SERIAL_FILE_NAMES = frozenset({"serial_number", "unique_id", "xgmi_device_id", "xgmi_hive_id", "product_serial",
                               "board_serial", "chassis_serial", "product_uuid", "board_asset_tag"})
# keys of KFD topology node properties that are unique ids (kfd_topology.c: unique_id, hive_id)
KFD_ID_KEYS = frozenset({"unique_id", "hive_id"})
# files naming this installation and this boot (machine-id(5), random(4) boot_id)
MACHINE_ID_FILES = ("/etc/machine-id", "/var/lib/dbus/machine-id", "/proc/sys/kernel/random/boot_id")
# GUIDs that name a standard, not a machine: the EFI global variable namespace.
WELL_KNOWN_UUIDS = frozenset({"8be4df61-93ca-11d2-aa0d-00e098032b8c"})


# Words a user or host name can collide with that the bundle must keep intact (groups, module and
# package name parts, tool words). Names shorter than MIN_DISTINCT_LEN count as common too.
COMMON_WORDS: frozenset[str] = frozenset("""
    amd amdgpu ati radeon gpu gpus cpu apu dgpu igpu render renderd video audio input kfd drm dri card
    root admin adm sudo wheel users user guest games plugdev netdev lp kvm docker lxd systemd nobody
    rocm hip hsa rocr roc miopen rocblas rccl cuda nvidia mesa intel xorg wayland display amdsmi smi
    linux kernel module modules firmware driver device devices pci node nodes topology power fan temp
    edge junction mem memory vram gtt compute sys proc dev boot lib bin opt usr var etc tmp run srv mnt
    home data test build server desktop workstation laptop local host localhost share config system
    python torch comfyui ollama ubuntu debian fedora arch none auto default main version name info
    status enabled disabled true false yes no on off ok
""".split())
MIN_DISTINCT_LEN = 3
_ALNUM_BEFORE = r"(?<![A-Za-z0-9])"
_ALNUM_AFTER = r"(?![A-Za-z0-9])"


def keep_env_name(name: str) -> bool:
    return name in KEEP_ENV_NAMES or name.startswith(KEEP_ENV_PREFIXES)


@dataclass
class Redactor:
    """Replaces identifying strings; built once per bundle (the salt is random and never stored)."""

    hostnames: list[str] = field(default_factory=list)
    users: dict[str, str] = field(default_factory=dict)  # real user name -> placeholder
    homes: dict[str, str] = field(default_factory=dict)  # real home path -> placeholder path
    salt: bytes = field(default_factory=lambda: secrets.token_bytes(16))
    ids: dict[str, str] = field(default_factory=dict)  # identifier value -> hashed value
    system_words: set[str] = field(default_factory=set)  # this machine's system groups and accounts
    counts: Counter = field(default_factory=Counter)  # replacements by kind (never the values)
    places: scrub.Placeholders = field(default_factory=scrub.Placeholders)
    machine_hashes: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._compile()

    def is_common(self, name: str) -> bool:
        """Is ``name`` also an ordinary word here (then it is replaced only in telling contexts)?"""
        lowered = name.lower()
        return (len(name) < MIN_DISTINCT_LEN or name.isdigit() or lowered in COMMON_WORDS
                or name in self.system_words or lowered in {w.lower() for w in self.system_words})

    def add_system_words(self, words: Iterable[str]) -> None:
        """Names of the machine's system groups and accounts: never replaced as bare words."""
        self.system_words.update(w for w in words if w)
        self._compile()

    # -- setup ---------------------------------------------------------------------------------
    def add_user(self, name: str, home: str | None = None) -> str:
        """Register a person's account; returns its placeholder (``userN``)."""
        if not name or name in self.users:
            return self.users.get(name, "")
        placeholder = f"user{len(self.users) + 1}"
        self.users[name] = placeholder
        for path in {home, f"/home/{name}"}:
            if path and path.rstrip("/") not in ("", "/", "/root", "/home") and path not in self.homes:
                self.homes[path.rstrip("/")] = f"/home/{placeholder}"
        self._compile()
        return placeholder

    def add_hostname(self, name: str) -> None:
        name = name.strip().rstrip(".")
        if not name or name.lower() in ("localhost", "localhost.localdomain", "(none)"):
            return
        for candidate in (name, name.split(".", 1)[0]):
            if candidate and candidate not in self.hostnames:
                self.hostnames.append(candidate)
        self._compile()

    def add_identifier(self, value: str) -> str:
        """Hash an identifier (serial, unique id) keeping its shape; remembered for text replacement."""
        value = value.strip()
        if len(value) < MIN_ID_LEN or value in self.ids:
            return self.ids.get(value, value)
        hashed = self._shaped_hash(value)
        self.ids[value] = hashed
        # A number appears as hex in sysfs and decimal in KFD: hash both spellings alike.
        number = _as_int(value)
        if number is not None:
            hashed_number = int(self._digest(str(number))[:15], 16)
            for spelling, fmt in _int_spellings(number):
                self.ids.setdefault(spelling, fmt(hashed_number))
            self.ids[value] = _reformat_like(value, hashed_number)
        self._compile()
        return self.ids[value]

    def add_machine_id(self, value: str) -> None:
        """A machine or boot id (32 hex digits, or a dashed UUID): hashed in both spellings everywhere."""
        plain = value.strip().lower().replace("-", "")
        if not re.fullmatch(r"[0-9a-f]{32}", plain):
            return
        hashed = self.machine_hashes.setdefault(plain, self._hex_hash(plain))
        self.ids[plain] = hashed
        dashed = f"{plain[:8]}-{plain[8:12]}-{plain[12:16]}-{plain[16:20]}-{plain[20:]}"
        self.ids[dashed] = f"{hashed[:8]}-{hashed[8:12]}-{hashed[12:16]}-{hashed[16:20]}-{hashed[20:]}"
        self._compile()

    def _digest(self, value: str) -> str:
        return hashlib.sha256(self.salt + value.encode()).hexdigest()

    def _shaped_hash(self, value: str) -> str:
        digest = self._digest(value)
        if UUID_RE.fullmatch(value):
            return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"
        return "redacted-" + digest[:12]

    def _compile(self) -> None:
        homes = sorted(self.homes, key=len, reverse=True)
        self._home_re = (re.compile("|".join(re.escape(h) + _ALNUM_AFTER for h in homes)) if homes else None)
        users = sorted(self.users, key=len, reverse=True)
        distinct = [u for u in users if not self.is_common(u)]
        self._user_re = (re.compile(_ALNUM_BEFORE + "(" + "|".join(map(re.escape, distinct)) + ")" + _ALNUM_AFTER)
                         if distinct else None)
        self._user_ctx_re = _user_contexts(users) if users else None
        hosts = sorted(self.hostnames, key=len, reverse=True)
        distinct_hosts = [h for h in hosts if not self.is_common(h)]
        self._host_re = (re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, distinct_hosts)) + r")(?![\w-])",
                                    re.IGNORECASE) if distinct_hosts else None)
        self._host_ctx_re = scrub.host_contexts(hosts)
        binary = [*homes, *distinct, *distinct_hosts]
        self._binary_re = (re.compile(_ALNUM_BEFORE.encode() + b"(" + b"|".join(re.escape(w.encode()) for w in binary)
                                      + b")" + _ALNUM_AFTER.encode()) if binary else None)
        ids = sorted(self.ids, key=len, reverse=True)
        self._id_re = (re.compile(r"(?<![\w])(" + "|".join(map(re.escape, ids)) + r")(?![\w])")
                       if ids else None)

    # -- use -----------------------------------------------------------------------------------
    def text(self, text: str, uuids: bool = True) -> str:
        """Every secret and identifying string in ``text`` replaced by its placeholder or hash."""
        counts = self.counts
        text = scrub.secrets_and_addresses(text, counts, self.places)
        text = scrub.machine_ids(text, counts, self.machine_hashes, self._hex_hash)
        if self._home_re is not None:
            text = self._home_re.sub(lambda m: _tally(counts, "home_folders", self.homes[m.group(0)]), text)
        if self._id_re is not None:
            text = self._id_re.sub(lambda m: _tally(counts, "identifiers", self.ids[m.group(1)]), text)
        if uuids:
            text = UUID_RE.sub(lambda m: m.group(0) if m.group(0).lower() in WELL_KNOWN_UUIDS
                               else _tally(counts, "identifiers", self.add_identifier_nocompile(m.group(0))), text)
        if self._user_ctx_re is not None:
            text = self._user_ctx_re.sub(lambda m: _tally(counts, "user_names", self.users[_first(m)]), text)
        if self._host_ctx_re is not None:
            text = self._host_ctx_re.sub(lambda m: _tally(counts, "host_names", "host1"), text)
        if self._host_re is not None:
            text = self._host_re.sub(lambda m: _tally(counts, "host_names", "host1"), text)
        if self._user_re is not None:
            text = self._user_re.sub(lambda m: _tally(counts, "user_names", self.users[m.group(1)]), text)
        return text

    def _hex_hash(self, value: str) -> str:
        """A salted hash of the same shape (32 hex digits) for a machine or boot id."""
        return self._digest(value)[:32]

    def user(self, name: str) -> str:
        """A name field known to hold an account name (passwd, group members): its placeholder."""
        return self.users.get(name, name)

    def binary(self, data: bytes) -> bytes:
        """Home folders and distinctive names replaced in bytes that are not text (common words stay:
        ``amd`` inside a kernel module is not a person)."""
        if self._binary_re is None:
            return data
        table = {k.encode(): v.encode() for k, v in (*self.homes.items(), *self.users.items())}
        table.update({h.encode(): b"host1" for h in self.hostnames})
        return self._binary_re.sub(lambda m: table.get(m.group(1), m.group(1)), data)

    def add_identifier_nocompile(self, value: str) -> str:
        if value not in self.ids:
            self.ids[value] = self._shaped_hash(value)
        return self.ids[value]

    def path(self, host_path: str) -> str:
        """A host path with home folders and user names replaced (for member names).

        UUIDs in names stay: they are vendor GUIDs (EFI variables), not this machine's ids.
        """
        return self.text(host_path, uuids=False)

    def environ(self, raw: bytes | str) -> str:
        """A ``/proc/*/environ`` blob reduced to GPU-stack variables, NUL-separated like the original."""
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        kept = []
        for entry in text.split("\0"):
            name, sep, value = entry.partition("=")
            if not sep or not keep_env_name(name):
                continue
            kept.append(f"{name}={self.text(value)}")
        return "".join(f"{e}\0" for e in kept)

    def summary(self) -> dict[str, int]:
        """Counts only: how many replacements of each kind were made, never the values."""
        return dict(sorted((k, n) for k, n in self.counts.items() if n))

    def secrets(self) -> list[str]:
        """Every string replaced wherever it stands (for tests and a last check over the bundle's
        bytes); common-word names are left out: ``amd`` stays in ``amdgpu``."""
        return [*(h for h in self.hostnames if not self.is_common(h)),
                *(u for u in self.users if not self.is_common(u)), *self.homes]


def _alternation(words: Iterable[str]) -> str:
    return "|".join(map(re.escape, sorted(words, key=len, reverse=True)))


def _first(match: re.Match) -> str:
    return next(g for g in match.groups() if g is not None)


def _user_contexts(users: Iterable[str]) -> re.Pattern:
    """Where any account name, common word or not, can only be the person."""
    alt = _alternation(users)
    return re.compile("|".join((
        rf"(?<![A-Za-z0-9_.-])({alt})(?=@)",  # alice@host, amd@ws
        rf"(?<=~)({alt}){_ALNUM_AFTER}",  # ~alice
        rf"(?:(?<=USER=)|(?<=LOGNAME=)|(?<=USERNAME=)|(?<=SUDO_USER=)|(?<=PAM_USER=))({alt}){_ALNUM_AFTER}",
        rf'(?:(?<="user": ")|(?<="user":")|(?<="owner": ")|(?<="owner":"))({alt})(?=")',  # telemetry JSON
        rf"(?<![A-Za-z0-9_.-])({alt})(?=\.local\b)",  # alice.local
    )))


def _tally(counts: Counter, kind: str, replacement: str) -> str:
    counts[kind] += 1
    return replacement


def _as_int(value: str) -> int | None:
    """An identifier as a number (hex or decimal), or None; past 64 bits it is no number (a 5000-digit
    unique_id made int() raise and the capture fail: issue 11 item 3)."""
    text = value.lower()
    if text.startswith("0x") and re.fullmatch(r"[0-9a-f]+", text[2:]):
        return bounded_int(text[2:], base=16)
    if text.isascii() and text.isdigit():
        return bounded_int(text)
    if re.fullmatch(r"[0-9a-f]+", text):
        return bounded_int(text, base=16)
    return None


def _int_spellings(number: int) -> Iterable[tuple[str, Callable[[int], str]]]:
    yield str(number), str
    yield f"{number:x}", lambda n: f"{n:x}"
    yield f"{number:X}", lambda n: f"{n:X}"
    yield f"0x{number:x}", lambda n: f"0x{n:x}"
    yield f"{number:016x}", lambda n: f"{n:016x}"


def _reformat_like(original: str, number: int) -> str:
    text = original.strip()
    if text.lower().startswith("0x"):
        return f"0x{number:x}"
    if text.isdigit():
        return str(number)
    return f"{number:0{len(text)}x}" if text.islower() or text.isdigit() else f"{number:0{len(text)}X}"


# -- building a redactor from a machine ----------------------------------------------------------


def redactor_for(root: HostRoot, extra_hostnames: Iterable[str] = (), extra_users: Mapping[str, str] | None = None
                 ) -> Redactor:
    """The redactor for a machine: its hostname, its people (regular accounts), their homes."""
    red = Redactor()
    status = parse_proc_status(root.try_read_text("/proc/self/status") or "")
    current_uid = status.uid if status is not None else None
    accounts = [(p.name, p.uid, p.home) for p in parse_passwd(root.try_read_text("/etc/passwd") or "")]
    # The current user first, so it is always user1.
    accounts.sort(key=lambda a: (a[1] != current_uid, a[1]))
    red.add_system_words(name for name, uid, _home in accounts
                         if (uid <= SYSTEM_UID_MAX and uid != current_uid) or uid in NOBODY_UIDS)
    red.add_system_words(g.name for g in parse_group(root.try_read_text("/etc/group") or "")
                         if g.gid <= SYSTEM_UID_MAX)
    for name, uid, home in accounts:
        if uid in NOBODY_UIDS or (uid <= SYSTEM_UID_MAX and uid != current_uid) or uid == 0:
            continue
        red.add_user(name, home)
    for entry in root.listdir("/home"):
        if entry not in red.users and entry not in ("lost+found",):
            red.add_user(entry, f"/home/{entry}")
    for name, home in dict(extra_users or {}).items():
        red.add_user(name, home)
    for path in ("/proc/sys/kernel/hostname", "/etc/hostname"):
        text = root.try_read_text(path)
        if text:
            red.add_hostname(text.strip())
    if root.is_live:
        red.add_hostname(os.uname().nodename)
    for path in MACHINE_ID_FILES:
        red.add_machine_id((root.try_read_text(path) or "").strip())
    for name in extra_hostnames:
        red.add_hostname(name)
    return red
