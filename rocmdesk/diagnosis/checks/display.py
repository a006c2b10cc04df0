"""Display checks: Xorg configuration or logs that force the wrong DDX (xorg/driver/xf86-video-amdgpu
conf/10-amdgpu.conf; LibreELEC PR #2324; Arch FS#41257).

Xorg never blocks compute; the faults worth flagging are a leftover ``Driver "nvidia"`` with no
NVIDIA GPU and ``radeon``/``fbdev``/``vesa`` forced onto an amdgpu-bound card. A missing
xf86-video-amdgpu is not a fault: the built-in modesetting driver is fine on amdgpu.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

from rocmdesk.diagnosis.engine import Failed, Passed, Skipped, check
from rocmdesk.diagnosis.facts import HostFacts
from rocmdesk.diagnosis.model import Evidence, Fix, Severity
from rocmdesk.diagnosis.pci_kfd import PciDevice

log = logging.getLogger(__name__)

AREA = "Display"
CONFIG_DIRS = ("/etc/X11/xorg.conf.d", "/usr/share/X11/xorg.conf.d")
WRONG_ON_AMDGPU = ("radeon", "fbdev", "vesa")
# what the root helper's xorg-disable-conf renames a file to (helper/rocmdesk-helper DISABLED_SUFFIX):
# the step shown must name the file the helper really creates
DISABLED_SUFFIX = ".rocmdesk-disabled"
MAX_EVIDENCE = 12


@dataclass(slots=True)
class XorgSection:
    kind: str  # "Device", "OutputClass", ...
    path: str
    start: int
    driver: str | None = None
    driver_line: int | None = None
    driver_text: str = ""
    match_driver: list[str] | None = None  # OutputClass MatchDriver alternatives
    bus_id: str | None = None
    options: dict[str, str] = field(default_factory=dict)


_WORDS_RE = re.compile(r'"([^"]*)"|([^\s"]+)')


def strip_comment(line: str) -> str:
    """The line without a ``#`` comment (a ``#`` inside quotes is kept)."""
    quoted = False
    for index, char in enumerate(line):
        if char == '"':
            quoted = not quoted
        elif char == "#" and not quoted:
            return line[:index]
    return line


def _words(line: str) -> list[str]:
    return [quoted if quoted or not bare else bare for quoted, bare in _WORDS_RE.findall(line)]


def parse_xorg_conf(text: str, path: str) -> list[XorgSection]:
    """Sections with their Driver, MatchDriver and BusID entries (keywords are case-insensitive)."""
    sections = []
    current: XorgSection | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = strip_comment(raw).strip()
        words = _words(stripped)
        if not words:
            continue
        key = words[0].lower()
        if key == "section" and len(words) > 1:
            current = XorgSection(words[1], path, number)
            continue
        if key == "endsection":
            if current is not None:
                sections.append(current)
            current = None
            continue
        if current is None or len(words) < 2:
            continue
        if key == "driver":
            current.driver, current.driver_line, current.driver_text = words[1].lower(), number, stripped
        elif key == "matchdriver":
            current.match_driver = [w.strip().lower() for w in words[1].split("|") if w.strip()]
        elif key == "busid":
            current.bus_id = words[1]
    return sections


def parse_bus_id(bus_id: str) -> tuple[int, int, int, int] | None:
    """Xorg ``PCI:bus[@domain]:dev:func`` (decimal) -> (domain, bus, dev, func)."""
    m = re.fullmatch(r"(?:PCI:)?(\d+)(?:@(\d+))?:(\d+):(\d+)", bus_id.strip(), re.IGNORECASE)
    if not m:
        return None
    return int(m.group(2) or 0), int(m.group(1)), int(m.group(3)), int(m.group(4))


def _pci_tuple(address: str) -> tuple[int, int, int, int] | None:
    try:
        domain, bus, devfn = address.split(":")
        dev, fn = devfn.split(".")
        return int(domain, 16), int(bus, 16), int(dev, 16), int(fn, 16)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class LogHit:
    path: str
    line: int
    text: str
    kind: str  # "nvidia-missing", "no-screens", "fallback"


_LOG_PATTERNS = (
    (re.compile(r'\(EE\) Failed to load module "nvidia"'), "nvidia-missing"),
    (re.compile(r"no screens found", re.IGNORECASE), "no-screens"),
    (re.compile(r"\(II\) (?:FBDEV|VESA)\(\d+\):"), "fallback"),
)


def scan_xorg_log(text: str, path: str) -> list[LogHit]:
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        for pattern, kind in _LOG_PATTERNS:
            if pattern.search(line):
                out.append(LogHit(path, number, line.strip(), kind))
                break
    return out


def _config_files(facts: HostFacts) -> list[str]:
    files = ["/etc/X11/xorg.conf"] if facts.root.is_file("/etc/X11/xorg.conf") else []
    for folder in CONFIG_DIRS:
        files.extend(f"{folder}/{n}" for n in facts.root.listdir(folder) if n.endswith(".conf"))
    return files


def _log_files(facts: HostFacts) -> list[str]:
    files = ["/var/log/Xorg.0.log"] if facts.root.is_file("/var/log/Xorg.0.log") else []
    for user in facts.root.listdir("/home"):
        path = f"/home/{user}/.local/share/xorg/Xorg.0.log"
        if facts.root.is_file(path):
            files.append(path)
    return files


def _applies_to_amdgpu(section: XorgSection, amdgpu_devices: list[PciDevice]) -> bool:
    if section.kind.lower() == "outputclass":
        # An OutputClass only applies to devices whose kernel driver matches (10-radeon.conf and
        # 10-nvidia.conf ship with MatchDriver "radeon" / "nvidia-drm": harmless here).
        return section.match_driver is None or "amdgpu" in section.match_driver
    if section.bus_id:
        wanted = parse_bus_id(section.bus_id)
        return any(_pci_tuple(d.address) == wanted for d in amdgpu_devices)
    return True


def _nvidia_section_applies(section: XorgSection) -> bool:
    if section.kind.lower() == "outputclass" and section.match_driver is not None:
        # MatchDriver "nvidia-drm" (the NVIDIA driver's own 10-nvidia.conf) matches nothing without
        # an NVIDIA GPU; a class that also matches amdgpu does force nvidia on it.
        return "amdgpu" in section.match_driver
    return True


@check("xorg-driver-conflict", AREA)
def xorg_driver_conflict(ctx):
    if ctx.is_wsl:
        return Skipped(ctx.WSL_SKIP_REASON)
    facts: HostFacts = ctx.facts
    configs = _config_files(facts)
    logs = _log_files(facts)
    if not configs and not logs:
        return Skipped("no Xorg configuration or log (Wayland-only, or no X server installed)")
    amdgpu_devices = [d for d in facts.amd_display_devices if d.driver == "amdgpu"]
    on_amdgpu = bool(amdgpu_devices) or (facts.pci_devices is None and bool(facts.amdgpu_loaded))
    has_nvidia = facts.has_nvidia_gpu
    by_file: dict[str, list[Evidence]] = {}
    reasons: list[str] = []
    for path in configs:
        text = facts.read(path)
        if not text:
            continue
        for section in parse_xorg_conf(text, path):
            if section.kind.lower() not in ("device", "outputclass") or not section.driver:
                continue
            line_ev = Evidence(section.driver_text, path, section.driver_line)
            if section.driver == "nvidia" and not has_nvidia and _nvidia_section_applies(section):
                by_file.setdefault(path, []).append(line_ev)
                reasons.append(f'{path} forces Driver "nvidia" but this machine has no NVIDIA GPU')
            elif (section.driver in WRONG_ON_AMDGPU and on_amdgpu
                  and _applies_to_amdgpu(section, amdgpu_devices)):
                by_file.setdefault(path, []).append(line_ev)
                reasons.append(f'{path} forces Driver "{section.driver}" on a GPU driven by the amdgpu kernel driver')
    log_ev: list[Evidence] = []
    log_kinds: set[str] = set()
    for path in logs:
        text = facts.read(path)
        if not text:
            continue
        for hit in scan_xorg_log(text, path):
            if hit.kind == "nvidia-missing" and has_nvidia:
                continue
            if hit.kind == "fallback" and not (on_amdgpu or facts.amd_display_devices):
                continue
            log_ev.append(Evidence(hit.text, hit.path, hit.line))
            log_kinds.add(hit.kind)
    if not by_file and not log_ev:
        return Passed(f"{len(configs)} Xorg configuration file(s) and {len(logs)} log(s) force no wrong driver")
    outcomes: list = []
    for path, ev in by_file.items():
        if path.startswith("/etc/X11/"):
            fix = Fix("xorg-disable-conf", True,
                      (f"Move {path} aside: it is renamed to {path}{DISABLED_SUFFIX} (a name Xorg does not "
                       "read), so it can be restored.",
                       "Restart the display manager or reboot."),
                      ("xorg-disable-conf", path))
        else:
            fix = Fix("xorg-remove-package-conf", True,
                      (f"{path} belongs to an installed package: find it with `dpkg -S {path}` or "
                       f"`rpm -qf {path}` and remove that package (for NVIDIA leftovers, the old NVIDIA "
                       "driver packages).", "Restart the display manager or reboot."))
        outcomes.append(Failed(evidence=ev + log_ev[:MAX_EVIDENCE], subject=path, fix=fix,
                               details=" ".join(dict.fromkeys(r for r in reasons if r.startswith(path)))))
    if not outcomes and log_kinds == {"fallback"}:
        # no configuration forces a driver: the X server chose fbdev/vesa itself because the kernel offered it no
        # amdgpu device, which is another finding's consequence, not an Xorg conflict
        return _fallback_outcome(facts, log_ev)
    if not outcomes:
        details = ("The Xorg log shows the X server failing or falling back to a driver without "
                   "acceleration. When it falls back to fbdev or vesa, the amdgpu kernel driver usually "
                   "did not load: see the Driver checks (nomodeset, blacklist, firmware).")
        outcomes.append(Failed(evidence=log_ev[:MAX_EVIDENCE], subject=log_ev[0].path, details=details,
                               fix=Fix("xorg-log-investigate", False, (
                                   "Fix any failing Driver check first (amdgpu must be loaded).",
                                   "Look for a Driver line in /etc/X11/xorg.conf or /etc/X11/xorg.conf.d/*.conf "
                                   "and remove it.", "Restart the display manager or reboot."))))
    return outcomes


FALLBACK_TITLE = "Xorg fell back to a basic display driver because amdgpu did not load"


def _fallback_outcome(facts: HostFacts, log_ev: list[Evidence]):
    """fbdev/vesa in the log and no configuration forcing it: point to the Driver finding that explains it."""
    if facts.amdgpu_loaded and not facts.is_wsl:
        return Passed("the Xorg log shows a fbdev/vesa fallback, but no configuration forces a driver and amdgpu "
                      "is loaded now (the log is from a boot without it)")
    args = facts.cmdline_args
    if "nomodeset" in args or "amdgpu.modeset=0" in args:
        cause = "nomodeset"
        why = "`nomodeset` on this boot's kernel command line stops amdgpu (see the nomodeset finding)"
    else:
        cause = "amdgpu-not-loaded"
        why = "amdgpu is not loaded (see the Driver findings: amdgpu-not-loaded, amdgpu-blacklisted, firmware)"
    return Failed(evidence=log_ev[:MAX_EVIDENCE], subject=log_ev[0].path, title=FALLBACK_TITLE,
                  severity=Severity.INFO,
                  explanation=(f"No Xorg configuration forces a driver; the X server used fbdev or vesa because {why}. "
                               "This is a consequence, not a separate fault: fixing the Driver finding brings the "
                               "accelerated driver back, and there is nothing to change in the Xorg configuration."),
                  fix=Fix("fix-driver-finding-first", False, (
                      f"Fix the {cause} finding in the Driver area first.",
                      "Reboot; the X server then uses amdgpu (or modesetting) by itself.")))
