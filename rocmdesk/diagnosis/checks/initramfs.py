"""Initramfs checks: is amdgpu in the running kernel's image, and is that copy current (update-initramfs(8),
dracut(8), modinfo(8)).

ROCm compute does not need amdgpu in the initramfs (udev loads it from the root file system);
the image matters for early KMS and for consistency: an old amdgpu.ko or an old modprobe.d copy
inside it wins at boot. So "missing" is informational and "stale" is a warning.
"""

from __future__ import annotations

import datetime
import logging

from rocmdesk.diagnosis.distro import initramfs_regenerate_step
from rocmdesk.diagnosis.engine import Failed, Passed, Skipped, check
from rocmdesk.diagnosis.initramfs import HostInitramfs, ImageModule, strip_compression
from rocmdesk.diagnosis.model import Evidence, Fix, Severity
from rocmdesk.diagnosis.python_envs import machine_gpus

log = logging.getLogger(__name__)

AREA = "Driver"
WSL_REASON = ("not applicable under WSL: the Windows driver runs the GPU and there is no Linux "
              "initramfs to check")
MODPROBE_DIR = "/etc/modprobe.d"

# How each generator is told to include amdgpu (initramfs-tools(7) modules file; dracut.conf(5), which wants the
# spaces; mkinitcpio.conf(5) MODULES).
ADD_STEPS = {
    "initramfs-tools": ("Append a line `amdgpu` to /etc/initramfs-tools/modules (one module per line).",),
    "dracut": ('Create /etc/dracut.conf.d/amdgpu.conf containing `force_drivers+=" amdgpu "` '
               "(leading and trailing space inside the quotes; the name must end in .conf).",),
    "mkinitcpio": ("Add amdgpu to the MODULES array in /etc/mkinitcpio.conf, e.g. `MODULES=(amdgpu)` "
                   "(keep modules already listed).",),
}


def _when(ts: float) -> str:
    return datetime.datetime.fromtimestamp(ts, tz=datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _preconditions(ctx) -> Skipped | HostInitramfs:
    if getattr(ctx, "is_wsl", False):
        return Skipped(WSL_REASON)
    gpus = machine_gpus(ctx.root, getattr(ctx, "facts", None))
    if gpus.readable and not gpus.amd:
        return Skipped("no AMD GPU on this machine")
    info: HostInitramfs = ctx.initramfs
    if info.builtin:
        return Skipped(f"amdgpu is built into kernel {info.kver} (modules.builtin), not a module")
    if info.problem and info.image is None:
        return Skipped(info.problem)
    return info


def _image_evidence(info: HostInitramfs) -> Evidence:
    image = info.image
    assert image is not None
    layout = " + ".join("uncompressed" if c == "none" else c for c in image.compressions)
    return Evidence(f"{image.size} bytes, modified {_when(image.mtime)}, {len(image.members)} entries ({layout})",
                    info.image_path)


def _generator_evidence(info: HostInitramfs) -> list[Evidence]:
    if info.generator is None:
        return []
    return [Evidence(f"built by {info.generator} ({', '.join(info.generator_evidence)})")]


def _regenerate_step(info: HostInitramfs) -> str:
    # the same words as every other step that rebuilds the image (facts.initramfs_regenerate_step): sudo, once
    return initramfs_regenerate_step(None, info.generator, info.kver)


SIGNING_FIRST_DETAILS = ("Secure Boot is on and the DKMS amdgpu module for this kernel is not loaded, so the "
                         "kernel is probably refusing its signature (see secure-boot-blocks-dkms). A rebuild now "
                         "would copy that refused module into the image, so rocmdesk offers no one-click rebuild: "
                         "fix the module signing first.")


def _signing_first(ctx) -> tuple[str, Evidence] | None:
    """The step that comes before any rebuild while Secure Boot refuses the DKMS amdgpu (the shared fact
    facts.dkms_amdgpu_refused, so this check does not depend on secure-boot-blocks-dkms having run), and its
    evidence; None otherwise."""
    facts = getattr(ctx, "facts", None)
    if facts is None or not facts.dkms_amdgpu_refused:
        return None
    modules = facts.dkms_amdgpu_modules()
    key = facts.dkms_mok_certificate
    enrol = (f"enrol the DKMS signing key (MOK) with `sudo mokutil --import {key}`" if key else
             "have DKMS sign it (there is no DKMS signing certificate yet) and enrol that key with `sudo mokutil "
             "--import`")
    step = ("First make Secure Boot accept the DKMS amdgpu module, as the secure-boot-blocks-dkms finding details: "
            f"{enrol}, confirm it in the MokManager screen at the next boot, and check `lsmod | grep amdgpu`; or "
            "remove amdgpu-dkms to use the distribution's signed in-tree driver. Only then rebuild the image.")
    return step, Evidence("Secure Boot is on and this DKMS amdgpu module is not loaded", modules[0])


# -- amdgpu-missing-from-initramfs ----------------------------------------------------------------


@check("amdgpu-missing-from-initramfs", AREA)
def amdgpu_missing_from_initramfs(ctx):
    pre = _preconditions(ctx)
    if isinstance(pre, Skipped):
        return pre
    info = pre
    if info.live is None:
        return Skipped(f"kernel {info.kver} has no amdgpu module under /lib/modules/{info.kver}")
    if info.modules:
        where = ", ".join(m.member.name for m in info.modules)
        return Passed(f"{info.image_path} holds {where}")
    image = info.image
    assert image is not None
    if not image.complete:
        return Skipped(f"{info.image_path} could only be read in part ({image.problem}); "
                       "cannot tell whether it holds amdgpu")
    evidence = [_image_evidence(info),
                Evidence(f"no amdgpu.ko (.ko, .ko.zst, .ko.xz) under lib/modules/{info.kver}/ in the image",
                         info.image_path),
                Evidence(f"the kernel loads {info.live.rel} from the root file system", info.live.path),
                *_generator_evidence(info)]
    if info.generator is None:
        return Failed(evidence=evidence, subject=info.image_path,
                      details="Which tool builds this image could not be told, so no one-click fix is offered.")
    steps = (*ADD_STEPS[info.generator],
             _regenerate_step(info),
             "Reboot when convenient; nothing changes for ROCm compute until then.",
             "Undo: remove the line (or file) again and run the same command.")
    signing = _signing_first(ctx)
    if signing is not None:
        fix = Fix("initramfs-add-amdgpu", True, (signing[0], *steps), None)
        return Failed(evidence=[*evidence, signing[1]], subject=info.image_path, severity=Severity.INFO, fix=fix,
                      details=SIGNING_FIRST_DETAILS)
    fix = Fix("initramfs-add-amdgpu", True, steps, ("initramfs-add-amdgpu",))
    return Failed(evidence=evidence, subject=info.image_path, severity=Severity.INFO, fix=fix)


# -- initramfs-stale -------------------------------------------------------------------------------


def _module_problems(info: HostInitramfs, copy: ImageModule) -> list[Evidence]:
    live = info.live
    assert live is not None
    img_where = f"{info.image_path}: {copy.member.name}"
    if strip_compression(copy.rel) != strip_compression(live.rel):
        kind = "DKMS" if copy.rel.startswith("updates/") else "in-tree"
        live_kind = "DKMS" if live.is_dkms else "in-tree"
        return [Evidence(f"the image holds the {kind} module {copy.rel} ({copy.member.size} bytes)", img_where),
                Evidence(f"the kernel would load the {live_kind} module {live.rel} (from {live.how})", live.path)]
    if copy.fingerprint is None or live.fingerprint is None:
        return []
    same = copy.fingerprint.same_module(live.fingerprint)
    if same is not False:
        # None: bytes differ and neither copy's modinfo could be read; recompression cannot be ruled out.
        return []
    ev = [Evidence(f"image copy: {copy.fingerprint.size} bytes, sha256 {copy.fingerprint.sha256[:16]}…, "
                   f"srcversion {copy.fingerprint.modinfo.get('srcversion', '?')}", img_where),
          Evidence(f"installed module: {live.fingerprint.size} bytes, sha256 {live.fingerprint.sha256[:16]}…, "
                   f"srcversion {live.fingerprint.modinfo.get('srcversion', '?')}", live.path)]
    for key in ("vermagic", "version"):
        a, b = copy.fingerprint.modinfo.get(key), live.fingerprint.modinfo.get(key)
        if a != b and (a or b):
            ev.append(Evidence(f"{key}: image `{a or '-'}`, installed `{b or '-'}`", live.path))
    return ev


def _mentions_amdgpu(data: bytes | None) -> bool:
    return data is not None and b"amdgpu" in data


def _modprobe_problems(ctx, info: HostInitramfs) -> list[Evidence]:
    image = info.image
    assert image is not None
    in_image = {name: d for name, d in image.captured.items() if name.startswith("etc/modprobe.d/")}
    image_has_dir = bool(in_image) or any(m.name == "etc/modprobe.d" for m in image.members)
    out: list[Evidence] = []
    live_names = set()
    for path in ctx.root.glob(MODPROBE_DIR, "*.conf"):
        name = path.rsplit("/", 1)[-1]
        live_names.add(name)
        try:
            live = ctx.root.read_bytes(path, 1 << 20)
            mtime = ctx.root.stat(path).st_mtime
        except OSError as exc:
            log.debug("cannot read %s: %s", path, exc)
            continue
        copy = in_image.get(f"etc/modprobe.d/{name}")
        member = image.member(f"etc/modprobe.d/{name}")
        if not (_mentions_amdgpu(live) or (copy is not None and _mentions_amdgpu(copy.data))):
            continue
        if copy is not None and copy.data is not None:
            if copy.data != live:
                out.append(Evidence(f"differs from the copy inside the image (modified {_when(mtime)}, "
                                    f"image built {_when(image.mtime)})", path))
                out += _changed_lines(path, live, copy.data)
        elif member is not None:  # a listing (support snapshot): size and mtime, no bytes
            # Generators do not all keep the file's mtime in the image (mkinitcpio's add_file uses
            # `install`, which stamps the copy with the build time), so a different mtime alone only
            # counts when the file was changed after the image was built.
            if member.size != len(live) or (member.mtime != int(mtime) and mtime > image.mtime):
                out.append(Evidence(f"differs from the copy inside the image ({len(live)} bytes, modified "
                                    f"{_when(mtime)}; the image's copy: {member.size} bytes, modified "
                                    f"{_when(member.mtime)})", path))
        elif mtime > image.mtime:
            out.append(Evidence(f"mentions amdgpu and was modified {_when(mtime)}, after the image was built "
                                f"({_when(image.mtime)}); the image has no copy of it", path))
    if image_has_dir:
        for member_name, copy in sorted(in_image.items()):
            name = member_name.rsplit("/", 1)[-1]
            if name not in live_names and name.endswith(".conf") and _mentions_amdgpu(copy.data):
                first = next((ln for ln in (copy.data or b"").decode("utf-8", "replace").splitlines()
                              if "amdgpu" in ln), "")
                out.append(Evidence(f"only the image still has {MODPROBE_DIR}/{name} (deleted since): "
                                    f"`{first.strip()}`", f"{info.image_path}: {member_name}"))
    return out


def _changed_lines(path: str, live: bytes, old: bytes) -> list[Evidence]:
    live_lines = live.decode("utf-8", "replace").splitlines()
    old_lines = set(old.decode("utf-8", "replace").splitlines())
    return [Evidence(f"now: `{text.strip()}` (not in the image)", path, number)
            for number, text in enumerate(live_lines, start=1)
            if text not in old_lines and "amdgpu" in text][:5]


@check("initramfs-stale", AREA)
def initramfs_stale(ctx):
    pre = _preconditions(ctx)
    if isinstance(pre, Skipped):
        return pre
    info = pre
    if not info.modules:
        return Passed(f"{info.image_path} holds no amdgpu module, so nothing in it can be stale")
    if info.live is None:
        return Skipped(f"kernel {info.kver} has no amdgpu module under /lib/modules/{info.kver} to compare with")
    evidence: list[Evidence] = []
    for copy in info.modules:
        evidence += _module_problems(info, copy)
    evidence += _modprobe_problems(ctx, info)
    if not evidence:
        return Passed(f"the amdgpu module and modprobe.d files in {info.image_path} match the installed ones")
    evidence = [_image_evidence(info), *evidence, *_generator_evidence(info)]
    if info.generator is None:
        return Failed(evidence=evidence, subject=info.image_path,
                      details="Which tool builds this image could not be told, so no one-click fix is offered.")
    steps = (_regenerate_step(info), "Reboot so the new image is used.")
    signing = _signing_first(ctx)
    if signing is not None:
        return Failed(evidence=[*evidence, signing[1]], subject=info.image_path, details=SIGNING_FIRST_DETAILS,
                      fix=Fix("initramfs-regenerate", True, (signing[0], *steps), None))
    return Failed(evidence=evidence, subject=info.image_path,
                  fix=Fix("initramfs-regenerate", True, steps, ("initramfs-regenerate",)))
