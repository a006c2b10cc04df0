"""modprobe.d, read exactly as kmod reads it: which files, in which order, their logical lines, and the
parameters a module ends up with (configuration files first, then the kernel command line)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from rocmdesk.diagnosis.model import SourcedLine
from rocmdesk.host import HostReadError, HostRoot

# Precedence order of kmod's configuration folders: a file name found in an earlier folder hides
# the same name in later ones (modprobe.d(5)).
MODPROBE_DIRS: tuple[str, ...] = (
    "/etc/modprobe.d", "/run/modprobe.d", "/usr/local/lib/modprobe.d", "/usr/lib/modprobe.d",
    "/lib/modprobe.d",
)

# Sources (kmod-project/kmod): libkmod/libkmod-config.c kmod_config_new(), conf_files_list(),
# conf_files_filter_out(), conf_files_insert_sorted(), kmod_config_parse(), kmod_config_parse_kcmdline();
# getline_wrapped() (libkmod-util.c / shared/util.c); default_config_paths[] (libkmod.c); the kernel's
# next_arg() (lib/cmdline.c) and parameq() (kernel/params.c). The root helper (helper/rocmdesk-helper,
# stdlib only) keeps its own copy of kmod_logical_lines; tests/unit/diagnosis/test_kmod_config.py feeds the
# same files to both.

# kmod's own separators: strtok_r(line, "\t ") -- not \v, \f, \r or Unicode spaces.
KMOD_SEPARATORS = " \t"
# The kernel's isspace() for module arguments (lib/ctype.c: \t \n \v \f \r and space; 0xa0 never reaches
# it from a UTF-8 file as one byte).
_KERNEL_SPACES = " \t\n\v\f\r"


def kmod_logical_lines(text: str) -> list[tuple[int, str]]:
    """(first physical line number, logical line) as libkmod's getline_wrapped() reads a file, without
    the empty lines and the comments kmod_config_parse() skips.

    A backslash right before "\\n" joins the next physical line with nothing in between; any other
    backslash is dropped and the character after it kept; only "\\n" ends a line (not "\\r", "\\f" or
    Unicode separators); a logical line whose FIRST character is "#" is a comment (an indented "#" is not:
    kmod reports it as a bad line and ignores it). The text is returned unstripped.
    """
    out: list[tuple[int, str]] = []
    buf: list[str] = []
    start = number = 1
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and text[i + 1:i + 2] == "\n":
            number += 1
            i += 2
            continue
        if ch == "\\":
            buf.append(text[i + 1:i + 2])
            i += 2
            continue
        if ch == "\n":
            out.append((start, "".join(buf)))
            buf = []
            number += 1
            start = number
        else:
            buf.append(ch)
        i += 1
    if buf or start != number:
        out.append((start, "".join(buf)))
    return [(n, line) for n, line in out if line and not line.startswith("#")]


def _strtok(text: str, pos: int) -> tuple[str | None, int]:
    """C strtok_r(…, " \\t"): (token or None, where the next call starts)."""
    while pos < len(text) and text[pos] in KMOD_SEPARATORS:
        pos += 1
    if pos >= len(text):
        return None, pos
    end = pos
    while end < len(text) and text[end] not in KMOD_SEPARATORS:
        end += 1
    return text[pos:end], min(end + 1, len(text))


def kmod_underscores(name: str) -> str:
    """kmod's underscores(): "-" becomes "_" in a module name, except inside a [...] pattern."""
    out = []
    in_brackets = False
    for ch in name:
        if ch == "[":
            in_brackets = True
        elif ch == "]":
            in_brackets = False
        out.append("_" if ch == "-" and not in_brackets else ch)
    return "".join(out)


def parse_kmod_command(logical: str) -> tuple[str, str | None, str | None] | None:
    """(command, module name normalised, rest of the line) of one logical modprobe.d line, split as
    kmod_config_parse() does: the command and the module are strtok_r(" \\t") words, the rest is everything
    after the one separator that ends the module name (None when nothing is left). None for a blank line."""
    logical = logical.split("\0", 1)[0]  # a C string: kmod sees nothing after a NUL
    command, pos = _strtok(logical, 0)
    if command is None:
        return None
    module, pos = _strtok(logical, pos)
    rest = logical[pos:] if module is not None and pos < len(logical) else None
    return command, kmod_underscores(module) if module is not None else None, rest


def parse_module_args(text: str) -> list[tuple[int, str, str | None]]:
    """(offset, name, value) of each ``name[=value]`` in a module's argument string, as the kernel's
    parse_args()/next_arg() split it: words end at unquoted whitespace, a double quote toggles quoting,
    quotes around a value (or the whole word) are dropped, and a bare ``--`` ends the arguments.
    Offsets index ``text``; like C, nothing after a NUL is seen."""
    text = text.split("\0", 1)[0]
    out: list[tuple[int, str, str | None]] = []
    n = len(text)
    pos = 0
    while True:
        while pos < n and text[pos] in _KERNEL_SPACES:  # skip_spaces()
            pos += 1
        if pos >= n:
            return out
        start = pos
        quoted = text[pos] == '"'
        args = pos + 1 if quoted else pos
        in_quote = quoted
        i = 0
        equals = 0  # as in C: 0 means "no '=' yet", so a '=' in the first position is no separator
        while args + i < n:
            ch = text[args + i]
            if ch in _KERNEL_SPACES and not in_quote:
                break
            if equals == 0 and ch == "=":
                equals = i
            if ch == '"':
                in_quote = not in_quote
            i += 1
        word = list(text[args:args + i])
        value: str | None = None
        if equals:
            value_start = equals + 1
            if value_start < len(word) and word[value_start] == '"':
                value_start += 1
                if word and word[-1] == '"':
                    word[-1] = "\0"
            if quoted and word and word[-1] == '"':
                word[-1] = "\0"
            value = "".join(word[value_start:]).split("\0", 1)[0]
            name = "".join(word[:equals])
        else:
            if quoted and word and word[-1] == '"':
                word[-1] = "\0"
            name = "".join(word).split("\0", 1)[0]
        if value is None and name == "--":
            return out
        out.append((start, name, value))
        pos = args + i + 1  # next_arg() consumes the separator


def param_eq(a: str, b: str) -> bool:
    """The kernel's parameq(): "-" and "_" are the same in parameter names."""
    return a.replace("-", "_") == b.replace("-", "_")


@dataclass(frozen=True, slots=True)
class ModuleParam:
    """One ``name=value`` a module gets when modprobe loads it, with the line that sets it."""

    name: str
    value: str | None
    source: SourcedLine  # a modprobe.d logical line (text unstripped), or /proc/cmdline with the word

    @property
    def on_cmdline(self) -> bool:
        return self.source.path == "/proc/cmdline"


def _kcmdline_options(args: Iterable[str], module: str) -> list[tuple[str, str]]:
    """(word, its ``param=value`` part) of the kernel command line words kmod_config_parse_kcmdline() hands
    ``module``: the module name ends at the first ".", and a "=" before that dot makes the word no module
    option."""
    out = []
    for arg in args:
        head, dot, param = arg.partition(".")
        if not dot or "=" in head or "=" not in param:
            continue
        if kmod_underscores(head.strip('"')) == module:
            out.append((arg, param))
    return out

def cmdline_values(args: Iterable[str], key: str) -> list[str]:
    """Every value of ``key=value`` on the kernel command line, in order."""
    prefix = key + "="
    return [arg[len(prefix):].strip('"') for arg in args if arg.startswith(prefix)]


def module_param(args: Iterable[str], module: str, param: str) -> str | None:
    """The last ``module.param=`` value on the command line (the kernel applies them in order);
    dashes and underscores are the same in parameter names."""
    wanted = f"{module}.{param}".replace("-", "_")
    value = None
    for arg in args:
        key, sep, val = arg.partition("=")
        if sep and key.replace("-", "_") == wanted:
            value = val.strip('"')
    return value


def effective_param(params: Iterable[ModuleParam], name: str) -> ModuleParam | None:
    """The setting of ``name`` the module ends up with: the last one (the kernel sets it once per word)."""
    found = None
    for param in params:
        if param_eq(param.name, name):
            found = param
    return found


def modprobe_dirs(root: HostRoot) -> list[str]:
    """The modprobe.d folders that exist, in kmod's order, each real folder once
    (/lib -> /usr/lib on merged-/usr systems)."""
    out: list[str] = []
    seen_real: set[str] = set()
    for folder in MODPROBE_DIRS:
        try:
            real_folder = root.real_path(folder)
        except HostReadError:
            continue
        if real_folder in seen_real or not root.is_dir(folder):
            continue
        seen_real.add(real_folder)
        out.append(folder)
    return out


def modprobe_files(root: HostRoot, dirs: Iterable[str]) -> list[str]:
    """The configuration files kmod reads, in its order: every ``*.conf`` and ``*.alias`` of the
    folders (not dot files, not folders), sorted by name as strcmp() does; a name already taken by an
    earlier folder hides the same name in later ones (/etc/modprobe.d/x.conf hides
    /usr/lib/modprobe.d/x.conf), as conf_files_list() and conf_files_insert_sorted() do."""
    chosen: dict[str, str] = {}
    for folder in dirs:
        for name in root.listdir(folder):
            if name in chosen or name.startswith(".") or not name.endswith((".conf", ".alias")):
                continue
            if root.is_dir(f"{folder}/{name}"):
                continue  # "Directories inside directories are not supported"
            chosen[name] = f"{folder}/{name}"
    return [chosen[name] for name in sorted(chosen, key=os.fsencode)]


def modprobe_lines(root: HostRoot, files: Iterable[str]) -> list[SourcedLine]:
    """kmod's logical lines of ``files``, in its order, comments left out, text unstripped."""
    out: list[SourcedLine] = []
    for path in files:
        text = root.try_read_text(path)
        if text:
            out.extend(SourcedLine(path, number, line) for number, line in kmod_logical_lines(text))
    return out


def options_lines(lines: Iterable[SourcedLine], module: str) -> list[SourcedLine]:
    """The modprobe.d ``options <module> ...`` lines, in kmod's order (whether or not they apply)."""
    out = []
    for line in lines:
        parsed = parse_kmod_command(line.text)
        if parsed and parsed[0] == "options" and parsed[1] == module and parsed[2] is not None:
            out.append(line)
    return out


def module_params(option_lines: Iterable[SourcedLine], cmdline_args: Iterable[str], module: str) -> list[ModuleParam]:
    """Every parameter ``module`` gets, in order: the ``options`` lines of the files, then ``module.param=``
    words of the kernel command line (kmod parses the command line last). kmod joins them with spaces
    and the kernel applies them left to right, so for a parameter set more than once the LAST one
    counts (see :func:`effective_param`). ``option_lines`` are the module's ``options`` lines (none for a
    built-in module: modprobe never loads it)."""
    pieces: list[tuple[str, SourcedLine]] = []
    for line in option_lines:
        parsed = parse_kmod_command(line.text)
        assert parsed is not None and parsed[2] is not None
        pieces.append((parsed[2].replace("\t", " "), line))  # kmod_config_add_options()
    for word, param in _kcmdline_options(cmdline_args, module):
        pieces.append((param, SourcedLine("/proc/cmdline", 1, word)))
    joined = ""
    starts: list[int] = []
    for text, _line in pieces:
        if joined:
            joined += " "
        starts.append(len(joined))
        joined += text
    out = []
    for offset, name, value in parse_module_args(joined):
        index = max(i for i, start in enumerate(starts) if start <= offset)
        out.append(ModuleParam(name, value, pieces[index][1]))
    return out
