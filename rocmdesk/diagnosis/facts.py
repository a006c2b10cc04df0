"""Machine facts the checks share, read once per run through a host root and cached.

:class:`HostFacts` only reads and caches: the parsers and readers it calls live in modules with one purpose
(:mod:`~rocmdesk.diagnosis.etc_parsers`, :mod:`~rocmdesk.diagnosis.kmod_config`,
:mod:`~rocmdesk.diagnosis.kernel_log`, :mod:`~rocmdesk.diagnosis.secure_boot`,
:mod:`~rocmdesk.diagnosis.env_settings`, :mod:`~rocmdesk.diagnosis.pci_kfd`,
:mod:`~rocmdesk.telemetry.accounts`, :mod:`~rocmdesk.telemetry.proc_scan`), so the live machine, a test tree
and a support snapshot all give the same answers. Facts that cannot be read are None (or empty) and the
checks turn that into a "skipped: <reason>".
"""

from __future__ import annotations

import functools
import logging
import re
import stat
from dataclasses import dataclass

from rocmdesk.diagnosis import env_settings, kernel_log, kmod_config, pci_kfd, secure_boot
from rocmdesk.diagnosis.container import ContainerInfo
from rocmdesk.diagnosis.container import detect as detect_container
from rocmdesk.diagnosis.distro import (
    distro_family,
    family_key,
    initramfs_regenerate_step,
    initramfs_step_for_image_systems,
)
from rocmdesk.diagnosis.env_settings import EnvSetting
from rocmdesk.diagnosis.etc_parsers import kernel_release_of, parse_int, parse_os_release, parse_posix_acl_users
from rocmdesk.diagnosis.initramfs import choose_generator, detect_generators
from rocmdesk.diagnosis.kernel_log import KernelLog
from rocmdesk.diagnosis.kmod_config import ModuleParam
from rocmdesk.diagnosis.model import SourcedLine
from rocmdesk.diagnosis.pci_kfd import GpuFact, KfdNode, PciDevice
from rocmdesk.diagnosis.secure_boot import parse_mokutil_sb_state
from rocmdesk.host import CommandResult, CommandRunner, HostReadError, HostRoot, RecordedRunner
from rocmdesk.telemetry import proc_scan
from rocmdesk.telemetry.accounts import (
    GroupEntry,
    PasswdEntry,
    ProcStatus,
    parse_group,
    parse_passwd,
    parse_proc_status,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class DeviceNode:
    path: str  # host path, "/dev/kfd"
    mode: int
    uid: int
    gid: int
    acl_users: frozenset[int] = frozenset()  # uids an access ACL grants read+write

    def describe(self, group_name: str | None) -> str:
        perms = stat.filemode(self.mode)
        return f"{perms} owner uid {self.uid}, group {group_name or self.gid} (gid {self.gid})"


class HostFacts:
    """Facts of one host root, each read on first use and cached for the rest of the run."""

    def __init__(self, root: HostRoot, runner: CommandRunner | None = None,
                 cmdline_args: list[str] | None = None, kernel_release: str | None = None) -> None:
        self.root = root
        self.runner = runner
        self._cmdline_args = cmdline_args
        self._kernel_release = kernel_release

    # -- small helpers ---------------------------------------------------------------------------

    # -- small helpers ---------------------------------------------------------------------------
    def read(self, path: str) -> str | None:
        return self.root.try_read_text(path)

    def read_reason(self, path: str) -> tuple[str | None, str | None]:
        """(text, None) or (None, "why it could not be read")."""
        try:
            return self.root.read_text(path), None
        except HostReadError as exc:
            return None, f"{path}: {exc.failure.value}"

    @functools.cached_property
    def cmdline_args(self) -> list[str]:
        if self._cmdline_args is not None:
            return self._cmdline_args
        text = self.read("/proc/cmdline")
        return text.split() if text else []

    @functools.cached_property
    def kernel_release(self) -> str | None:
        if self._kernel_release is not None:
            return self._kernel_release
        return kernel_release_of(self.read("/proc/sys/kernel/osrelease"))

    # -- distribution ----------------------------------------------------------------------------
    @functools.cached_property
    def os_release(self) -> dict[str, str]:
        for path in ("/etc/os-release", "/usr/lib/os-release"):
            text = self.read(path)
            if text:
                return parse_os_release(text)
        return {}

    @functools.cached_property
    def distro_family(self) -> str | None:
        return distro_family(self.os_release)

    @functools.cached_property
    def distro_key(self) -> str | None:
        """The fine family (rocmdesk.diagnosis.distro.FAMILIES) whose commands the fix steps name."""
        return family_key(self.os_release, ostree_booted=self.root.exists("/run/ostree-booted"))

    def grub_has(self, word: str) -> bool | None:
        """Does a GRUB_CMDLINE_LINUX* line of /etc/default/grub hold ``word``? None when there is no such file."""
        text = self.read("/etc/default/grub")
        if text is None:
            return None
        return any(line.lstrip().startswith("GRUB_CMDLINE_LINUX") and word in line.split("=", 1)[-1]
                   for line in text.splitlines())

    @functools.cached_property
    def container(self) -> ContainerInfo | None:
        return detect_container(self.root)

    @property
    def in_container(self) -> bool:
        return self.container is not None

    # -- WSL ----------------------------------------------------------------------------------------
    @functools.cached_property
    def wsl_evidence(self) -> list[SourcedLine]:
        """Why this looks like WSL (ROCm/amdsmi docs/how-to/amdsmi-wsl-mode.md: no /dev/kfd, the GPU is reached
        through /dev/dxg); empty when it does not."""
        out = []
        for path in ("/proc/version", "/proc/sys/kernel/osrelease"):
            text = self.read(path)
            if text and "microsoft" in text.lower():
                out.append(SourcedLine(path, 1, text.strip().splitlines()[0][:200]))
        if self.root.exists("/dev/dxg"):
            out.append(SourcedLine("/dev/dxg", None, "exists (the WSL GPU paravirtualisation device)"))
        return out

    @property
    def is_wsl(self) -> bool:
        return bool(self.wsl_evidence)

    # -- PCI and KFD ----------------------------------------------------------------------------------
    @functools.cached_property
    def pci_devices(self) -> list[PciDevice] | None:
        """Every PCI device; None when the root has no readable sys/bus/pci/devices."""
        return pci_kfd.read_pci_devices(self.root)

    @functools.cached_property
    def amd_display_devices(self) -> list[PciDevice]:
        """AMD GPUs on the PCI bus: display controllers and Instinct accelerators (class 0x12)."""
        return [d for d in self.pci_devices or [] if d.is_amd_gpu]

    @functools.cached_property
    def has_nvidia_gpu(self) -> bool:
        return any(d.is_nvidia_gpu for d in self.pci_devices or [])

    @functools.cached_property
    def kfd_nodes(self) -> list[KfdNode] | None:
        """KFD topology nodes (CPU and GPU); None when there is no topology folder."""
        return pci_kfd.read_kfd_nodes(self.root)

    @functools.cached_property
    def kfd_gpu_nodes(self) -> list[KfdNode]:
        return [n for n in self.kfd_nodes or [] if n.gfx is not None]

    @functools.cached_property
    def amd_gpus(self) -> list[GpuFact]:
        """AMD GPUs: PCI display devices joined with KFD nodes; KFD-only GPUs when the root has
        no PCI folder (some snapshots)."""
        return pci_kfd.join_amd_gpus(self.amd_display_devices, self.kfd_gpu_nodes)

    # -- amdgpu module ---------------------------------------------------------------------------------
    @functools.cached_property
    def proc_modules(self) -> set[str] | None:
        text = self.read("/proc/modules")
        if text is None:
            return None
        return {line.split()[0] for line in text.splitlines() if line.strip()}

    @functools.cached_property
    def amdgpu_initstate(self) -> str | None:
        text = self.read("/sys/module/amdgpu/initstate")
        return text.strip() if text is not None else None

    @functools.cached_property
    def amdgpu_loaded(self) -> bool | None:
        """True when loaded or built in (ROCm/rocm_smi_lib python_smi_tools/rocm_smi.py checks
        /sys/module/amdgpu/initstate); None when nothing says either way."""
        if self.proc_modules is not None and "amdgpu" in self.proc_modules:
            return True
        if self.amdgpu_initstate == "live":
            return True
        if self.amdgpu_initstate is None and self.root.is_dir("/sys/module/amdgpu/parameters"):
            return True  # built in: no initstate, but parameters exist
        if self.proc_modules is not None or self.root.is_dir("/sys/module"):
            return False
        return None

    def amdgpu_loaded_evidence(self) -> list[SourcedLine]:
        out = []
        if self.proc_modules is not None:
            # the text does not repeat the path: every renderer shows "path: text"
            state = "amdgpu is listed" if "amdgpu" in self.proc_modules else "amdgpu is not listed"
            out.append(SourcedLine("/proc/modules", None, state))
        if self.amdgpu_initstate is not None:
            out.append(SourcedLine("/sys/module/amdgpu/initstate", 1, self.amdgpu_initstate))
        elif not self.root.exists("/sys/module/amdgpu"):
            out.append(SourcedLine("/sys/module/amdgpu", None, "missing: amdgpu is neither loaded nor built in"))
        return out

    @functools.cached_property
    def amdgpu_builtin(self) -> SourcedLine | None:
        """Where it shows that amdgpu is built into the running kernel, or None (a module, or unknown).

        ``modules.builtin`` lists every built-in module's would-be path ("kernel/drivers/gpu/drm/amd/amdgpu/
        amdgpu.ko"); the kernel's config (CONFIG_DRM_AMDGPU=y) says the same. A built-in driver is never
        loaded by modprobe (kmod reports "Module amdgpu is builtin" and does nothing), so no modprobe.d
        line (options, blacklist, install) reaches it; only ``amdgpu.<param>=`` on the kernel command line
        does: "Parameters for modules which are built into the kernel need to be specified on the kernel
        command line" (Documentation/admin-guide/kernel-parameters.rst; kmod tools/modprobe.c).
        """
        kver = self.kernel_release
        if not kver:
            return None
        for base in ("/lib/modules", "/usr/lib/modules"):
            path = f"{base}/{kver}/modules.builtin"
            text = self.read(path)
            if text is None:
                continue
            for number, line in enumerate(text.splitlines(), start=1):
                if re.fullmatch(r"(?:\S+/)?amdgpu\.ko", line.strip()):
                    return SourcedLine(path, number, line.strip())
            return None  # the list is there and amdgpu is not in it: a module
        config = f"/boot/config-{kver}"
        for number, line in enumerate((self.read(config) or "").splitlines(), start=1):
            if line.strip() == "CONFIG_DRM_AMDGPU=y":
                return SourcedLine(config, number, line.strip())
        return None

    @functools.cached_property
    def ppfeaturemask(self) -> int | None:
        return parse_int(self.read("/sys/module/amdgpu/parameters/ppfeaturemask"))

    # -- module configuration ---------------------------------------------------------------------------
    @functools.cached_property
    def modprobe_dirs(self) -> list[str]:
        """The modprobe.d folders that exist, in kmod's order (:func:`kmod_config.modprobe_dirs`)."""
        return kmod_config.modprobe_dirs(self.root)

    @functools.cached_property
    def modprobe_files(self) -> list[str]:
        """The configuration files kmod reads, in its order (:func:`kmod_config.modprobe_files`)."""
        return kmod_config.modprobe_files(self.root, self.modprobe_dirs)

    @functools.cached_property
    def modprobe_lines(self) -> list[SourcedLine]:
        """kmod's logical lines of :attr:`modprobe_files`, in its order, comments left out, text unstripped."""
        return kmod_config.modprobe_lines(self.root, self.modprobe_files)

    def module_options_lines(self, module: str) -> list[SourcedLine]:
        """The modprobe.d ``options <module> ...`` lines, in kmod's order (whether or not they apply)."""
        return kmod_config.options_lines(self.modprobe_lines, module)

    def module_params(self, module: str) -> list[ModuleParam]:
        """Every parameter ``module`` gets, in order (:func:`kmod_config.module_params`). A built-in amdgpu
        (:attr:`amdgpu_builtin`) is never loaded by modprobe, so it gets the command line words only."""
        builtin = module == "amdgpu" and self.amdgpu_builtin is not None
        return kmod_config.module_params([] if builtin else self.module_options_lines(module),
                                         self.cmdline_args, module)

    def regenerate_initramfs_step(self) -> str:
        """:func:`initramfs_regenerate_step` for this root: the generator the initramfs inspection picks
        (rocmdesk.diagnosis.initramfs.choose_generator, the rule the root helper uses) and the running kernel."""
        image_step = initramfs_step_for_image_systems(self.distro_key)
        if image_step is not None:
            return image_step
        kver = self.kernel_release
        generators = detect_generators(self.root)
        chosen = choose_generator(self.root, generators, kver) if generators and kver else None
        if chosen is None and len(generators) == 1:
            chosen = generators[0]
        if chosen is None and len(generators) > 1:  # several and none confirmed: name them all, guess none
            return initramfs_regenerate_step(None, None, kver)
        return initramfs_regenerate_step(self.distro_family, chosen[0] if chosen else None, kver)

    # -- kernel log -------------------------------------------------------------------------------------
    @property
    def kernel_log(self) -> KernelLog | None:
        """The current boot's kernel messages: a log file, else ``journalctl -k -b 0``, else ``dmesg``."""
        return self.kernel_log_search[0]

    @property
    def kernel_log_problems(self) -> list[str]:
        """Why each kernel log source was not used, in words (the skip reason when none was)."""
        return self.kernel_log_search[1]
    @functools.cached_property
    def kernel_log_search(self) -> tuple[KernelLog | None, list[str]]:
        """(log or None, why the other sources were passed over): :func:`kernel_log.search`."""
        return kernel_log.search(self.root, self.runner)

    # -- Secure Boot, DKMS, packages ---------------------------------------------------------------
    @functools.cached_property
    def secure_boot(self) -> tuple[bool | None, str]:
        """(enabled, evidence text) from the SecureBoot efivar."""
        return secure_boot.read_secure_boot(self.root)

    # -- the DKMS signing key (MOK) and mokutil -----------------------------------------------------------
    @functools.cached_property
    def dkms_mok_certificate_setting(self) -> SourcedLine | None:
        """The last ``mok_certificate=`` of DKMS's framework.conf files."""
        return secure_boot.mok_certificate_setting(self.root)

    def dkms_mok_candidates(self) -> list[str]:
        """Where DKMS keeps the public half of its signing key, most specific first."""
        return secure_boot.mok_candidates(self.dkms_mok_certificate_setting, self.kernel_release)

    @functools.cached_property
    def dkms_mok_certificate(self) -> str | None:
        """The DKMS signing certificate that exists in the root, or None (DKMS never made one)."""
        return next((path for path in self.dkms_mok_candidates() if self.root.is_file(path)), None)
    def mokutil(self, *args: str) -> tuple[CommandResult | None, str]:
        """``mokutil <args>`` (read-only queries only) through the runner: :func:`secure_boot.run_mokutil`."""
        return secure_boot.run_mokutil(self.root, self.runner, *args)

    def dkms_amdgpu_modules(self) -> list[str]:
        """Host paths of DKMS amdgpu modules for the running kernel (modinfo -F filename:
        /lib/modules/<kver>/updates/dkms; amd/MxGPU-Virtualization#18)."""
        kver = self.kernel_release
        if not kver:
            return []
        out = []
        seen = set()
        for base in ("/usr/lib/modules", "/lib/modules"):
            folder = f"{base}/{kver}/updates/dkms"
            for name in self.root.listdir(folder):
                if re.fullmatch(r"amdgpu\.ko(\.(xz|zst|gz))?", name):
                    try:
                        real = self.root.real_path(f"{folder}/{name}")
                    except HostReadError:
                        continue
                    if real not in seen:
                        seen.add(real)
                        out.append(f"{folder}/{name}")
        return out

    @functools.cached_property
    def dkms_amdgpu_refused(self) -> bool:
        """True when Secure Boot may be refusing the DKMS amdgpu: one exists for the running kernel, Secure Boot is
        on (efivar, else mokutil --sb-state) with shim's validation not turned off, and amdgpu is not loaded: the
        situation secure-boot-blocks-dkms examines. False when any of these is not known to hold. Shared so other
        checks (the initramfs rebuild) can put module signing first without depending on that check."""
        if not self.dkms_amdgpu_modules():
            return False
        enabled, _text = self.secure_boot
        if enabled is False:
            return False
        state, _why = self.mokutil("--sb-state")
        sb_enabled, shim_off = parse_mokutil_sb_state(state.stdout) if state is not None else (None, False)
        if shim_off or not (enabled or sb_enabled):
            return False
        return self.amdgpu_loaded is False

    @functools.cached_property
    def dpkg_status(self) -> dict[str, tuple[str, int]] | None:
        """Installed Debian packages: name -> (version, line of its ``Package:`` field)."""
        text = self.read("/var/lib/dpkg/status")
        if text is None:
            return None
        out: dict[str, tuple[str, int]] = {}
        name, version, status, start = None, "", "", 0
        for number, line in enumerate([*text.splitlines(), ""], start=1):
            if not line.strip():
                if name and status.split()[-1:] == ["installed"]:
                    out[name] = (version, start)
                name, version, status = None, "", ""
                continue
            if line.startswith("Package:"):
                name, start = line.split(":", 1)[1].strip(), number
            elif line.startswith("Version:"):
                version = line.split(":", 1)[1].strip()
            elif line.startswith("Status:"):
                status = line.split(":", 1)[1].strip()
        return out

    def other_package_list(self) -> tuple[str, list[str]] | None:
        """Installed package names from rpm or pacman through the runner (live or recorded)."""
        runner = self.runner
        if runner is None:
            return None
        for tool, argv_tail in (("rpm", ["-qa", "--qf", "%{NAME}\n"]), ("pacman", ["-Qq"])):
            program = runner.which(tool)
            if program is None:
                continue
            if not self.root.is_live and not isinstance(runner, RecordedRunner):
                return None
            result = runner.run([program, *argv_tail], timeout=20)
            if result.ok:
                return " ".join([program, *argv_tail]), [ln.strip() for ln in result.stdout.splitlines() if ln.strip()]
        return None

    @functools.cached_property
    def rocm_version(self) -> str | None:
        text = self.read("/opt/rocm/.info/version")
        if text and text.strip():
            return text.strip().splitlines()[0]
        versions = sorted(n[5:] for n in self.root.listdir("/opt") if n.startswith("rocm-"))
        return versions[-1] if versions else None

    # -- users and groups -----------------------------------------------------------------------------
    @functools.cached_property
    def groups(self) -> list[GroupEntry] | None:
        text = self.read("/etc/group")
        return parse_group(text) if text is not None else None

    @functools.cached_property
    def passwd(self) -> list[PasswdEntry] | None:
        text = self.read("/etc/passwd")
        return parse_passwd(text) if text is not None else None

    @functools.cached_property
    def self_status(self) -> ProcStatus | None:
        text = self.read("/proc/self/status")
        return parse_proc_status(text) if text else None

    @functools.cached_property
    def user(self) -> PasswdEntry | None:
        status = self.self_status
        if status is None or self.passwd is None:
            return None
        return next((p for p in self.passwd if p.uid == status.uid), None)

    def group_name(self, gid: int) -> str | None:
        return next((g.name for g in self.groups or [] if g.gid == gid), None)

    def group_by_name(self, name: str) -> GroupEntry | None:
        return next((g for g in self.groups or [] if g.name == name), None)

    def configured_gids(self, user: PasswdEntry) -> set[int]:
        """The user's groups as configured: primary gid plus every group listing the name."""
        gids = {user.gid} if user.gid is not None else set()
        gids.update(g.gid for g in self.groups or [] if user.name in g.members)
        return gids

    def device_nodes(self) -> list[DeviceNode]:
        """/dev/kfd and the render nodes that exist in the root, with owner, group and mode."""
        paths = ["/dev/kfd"] + [f"/dev/dri/{n}" for n in self.root.listdir("/dev/dri") if n.startswith("renderD")]
        out = []
        for path in paths:
            try:
                st = self.root.stat(path)
            except HostReadError:
                continue
            acl_data = self.root.getxattr(path, "system.posix_acl_access")
            acl = parse_posix_acl_users(acl_data) if acl_data else frozenset()
            out.append(DeviceNode(path, st.st_mode, st.st_uid, st.st_gid, acl))
        return out

    # -- environment -----------------------------------------------------------------------------------
    @functools.cached_property
    def env_settings(self) -> list[EnvSetting]:
        """GPU-related environment variables from every place that sets them (systemd.exec(5) Environment=, pam_env(8)
        /etc/environment)."""
        return env_settings.collect(self.root, self._homes(), self.in_container, self.gpu_processes)

    def _homes(self) -> list[str]:
        user = self.user
        if user is not None and user.home and user.home != "/":
            return [user.home]
        return [f"/home/{n}" for n in self.root.listdir("/home")][:16]
    @functools.cached_property
    def gpu_processes(self) -> list[tuple[int, str]]:
        """(pid, name) of processes holding /dev/kfd or a render node open (bounded: :mod:`proc_scan`)."""
        return proc_scan.gpu_processes(self.root)
