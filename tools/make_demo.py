#!/usr/bin/env python3
"""Generate the demo recordings in resources/demo/ (deterministic: fixed seeds, gzip mtime 0).

The recordings are *synthetic*: a small physical model driven by a job timeline, not captures of
a real machine. They are labelled as demo data everywhere they show (Snapshot.demo, backend
"demo"). What the model gets right, and where the numbers come from:

* MI300X (gfx942, 192 GiB HBM3): no edge sensor, only junction and mem (Syllo/nvtop#514);
  socket power from ``power1_input`` only (ROCm/pytorch PR #1457); cap 750 W and ~2100 MHz sclk / 900 MHz idle
  mclk as printed by rocm-smi on an MI300X (ROCm/legacy-rocm-build#5231); the eight PCI addresses
  are the ones of an 8-GPU MI300X platform in the amd-smi CHANGELOG (``amd-smi xgmi`` example);
  device id 0x74a1. Temperature limits: see MI300X_CRIT_C below (sources cited there).
* RX 7900 XTX (gfx1100, 24 GiB = 25753026560 bytes as rocm-smi reports it, henrygd/beszel#414);
  crit/emergency limits and fan maximum as in the LACT rx7900xtx dump; mclk levels
  96/456/772/1249 MHz from its pp_dpm_mclk; amdgpu selects the COMPUTE power profile while KFD
  queues are busy.
* Dynamics: first-order thermal lag (heatsink tau about a minute, die about seconds), power
  demand above the cap is clamped to the cap with small regulation noise and sclk drops as
  (cap / demand) ** 0.45, a zero-RPM fan with hysteresis and a slew limit, sensor noise.
* Processes, as rocmdesk reads them on a real machine (telemetry/fdinfo.py, kfd_procs.py): PyTorch
  runs its kernels on KFD user-mode queues, which DRM fdinfo's gfx engine time does not count (the
  amdgpu_top author: "ROCm uses /dev/kfd, so no usage is recorded in fdinfo",
  Umio-Yasuno/amdgpu_top#49). So the training ranks and ComfyUI are KFD processes: VRAM from
  ``vram_<gpu_id>``, SDMA time from ``sdma_<gpu_id>``, GPU % N/A with the reason the live scan
  gives, and Compute from ``stats_<gpu_id>/cu_occupancy``. That counter is a snapshot of the
  process's waves in flight divided by the waves one CU can hold, rounded up (kfd_process.c), so
  it counts wave slots, not "CUs touched": GEMM-heavy training keeps about half of the MI300X's
  304 CUs' slots full while the GPU is ~100 % busy, all-reduce gaps show a few RCCL CUs. The
  RX 7900 XTX (gfx1100) has no cu_occupancy file (kfd_procs.py: only GPUs whose kfd2kgd backend
  implements get_cu_occupancy, the gfx9 family), so ComfyUI's Compute is N/A with that reason.
  SDMA time follows the bytes copied at ~28 GB/s (weights in, checkpoint out, input batches).
  The desktop processes (gnome-shell, Xwayland, Firefox) are DRM fdinfo clients with gfx GPU %.
* One machine: each recording is the telemetry of the demo machine of the same name
  (tools/make_demo_machines.py, resources/demo/NAME.machine.tar.gz), which the Diagnosis, Tuning and
  Report tabs read. So the GPUs (PCI address, card, render node, KFD node, ids, VBIOS), the kernel and
  ROCm versions, the power caps and temperature limits are that machine's sysfs values, and each
  process has the PID, name and command line its /proc holds, with the user name as the machine's
  bundle shows it: the capture redacts the account (uid 1000 becomes ``user1``, its home
  ``/home/user1``), so the recording uses the same placeholder. tests/unit/report/test_demo_consistency.py
  compares every recording with its machine.
* Each recording is simulated for two loops and only the second is kept, so the temperatures at
  the end flow into those at the start: the demo loops without a visible seam.

Run from the repository root: ``.venv/bin/python tools/make_demo.py``.
"""

from __future__ import annotations

import math
import random
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rocmdesk.telemetry.fdinfo import (  # noqa: E402
    KFD_ONLY_GPU_PERCENT,
    KFD_ONLY_GTT,
    NOT_KFD,
    SOURCE_DRM,
    SOURCE_KFD,
)
from rocmdesk.telemetry.kfd_procs import MISSING_REASONS  # noqa: E402
from rocmdesk.telemetry.model import GpuInfo, GpuKind  # noqa: E402
from rocmdesk.telemetry.recording import Frame, Recording, write_recording  # noqa: E402

GIB = 1 << 30
MIB = 1 << 20
PAGE = 4096


SDMA_BYTES_PER_S = 28e9  # host <-> VRAM copies through the SDMA engines


# Static per-process keys (recording.process_info), as the live merge of DRM fdinfo and the KFD
# leaves them: a KFD-only compute process has no gfx-engine time and no GTT figure.
KFD_ONLY_STATIC = {
    "sources": [SOURCE_KFD], "gpu_percent": None, "gtt_bytes": None,
    "unavailable": {"gpu_percent": KFD_ONLY_GPU_PERCENT, "gtt_bytes": KFD_ONLY_GTT},
}
DRM_ONLY_STATIC = {
    "sources": [SOURCE_DRM], "cu_occupancy_percent": None, "cu_occupied": None, "sdma_us": None,
    "unavailable": {"cu_occupancy_percent": NOT_KFD, "cu_occupied": NOT_KFD, "sdma_us": NOT_KFD},
}


def kfd_process(info: dict, cu_supported: bool = True) -> dict:
    out = {**info, **KFD_ONLY_STATIC, "unavailable": dict(KFD_ONLY_STATIC["unavailable"])}
    if not cu_supported:
        reason = MISSING_REASONS["cu_occupied"]
        out.update(cu_occupied=None, cu_occupancy_percent=None)
        out["unavailable"].update(cu_occupied=reason, cu_occupancy_percent=reason)
    return out


def drm_process(info: dict) -> dict:
    return {**info, **DRM_ONLY_STATIC, "unavailable": dict(DRM_ONLY_STATIC["unavailable"])}


def cu_percent(cu_occupied: int, cu_count: int) -> float:
    """As kfd_procs.KfdProcessGpu.cu_occupancy_percent computes it."""
    return round(min(100.0, cu_occupied * 100.0 / cu_count), 1)


def page(n: float) -> int:
    return int(n) // PAGE * PAGE


def lag(current: float, target: float, tau_s: float, dt: float = 1.0) -> float:
    """First-order response over dt (exact for a step held during dt)."""
    return target + (current - target) * math.exp(-dt / tau_s)


# -- MI300X node ------------------------------------------------------------------------------

MI300X_PCI = ("0000:05:00.0", "0000:26:00.0", "0000:46:00.0", "0000:65:00.0",
              "0000:85:00.0", "0000:a6:00.0", "0000:c6:00.0", "0000:e5:00.0")
MI300X_HBM = 206158430208  # 192 GiB
MI300X_CAP = 750.0
# What the demo machine reports (tools/make_demo_machines.py builds its sysfs from tests/support/instinct.py's
# MI300X dump; its /opt/rocm/.info/version and kernel are tests/support/scenarios.py's)
MI300X_SUBSYSTEM = "1002:0c34"
MI300X_VBIOS = "113-M3000100-102"
MI300X_GTT = 512 * GIB  # mem_info_gtt_total of the machine: half of its 1 TiB of RAM
KERNEL = "6.8.0-51-generic"
ROCM_VERSION = "6.2.4-139"
DEMO_USER = "user1"  # the machine's uid 1000 as its bundle names it (the capture redacts user names)
MI300X_CUS = 304  # simd_count 1216 / simd_per_cu 4 in its KFD node properties
# Share of the CUs' wave slots a rank fills while its kernels run, by phase (see the docstring).
MI300X_WAVE_FILL = {"load": (0.04, 0.15), "warmup": (0.35, 0.6), "train": (0.42, 0.62),
                    "eval": (0.3, 0.48), "checkpoint": (0.05, 0.2)}
NOT_RECORDED = "not recorded in this demo"
# Host link of the OAM module: PCIe Gen5 x16 (AMD Instinct MI300X data sheet); the link runs at full
# speed while the job runs, as current_link_speed/width report it on a busy GPU
MI300X_PCIE = {"speed_gts": 32.0, "width": 16, "max_speed_gts": 32.0, "max_width": 16}
# The reason gpu_metrics' indep_throttle_status gives while the SMU holds socket power at the cap
# (bit 0, THROTTLER_PPT0_BIT in kgd_pp_interface.h; telemetry/gpu_metrics.py names it)
PPT_THROTTLE = {"active": True, "reasons": ["power limit (PPT0)"]}
NOT_THROTTLED = {"active": False, "reasons": []}

# MI300X temperature limits, as hwmon exposes them on GC 9.4.3 (no edge sensor, so no temp1_*):
# * which files: the amdgpu patch "drm/amd/pm: Add GC v9.4.3 thermal limits to hwmon" (Lijo Lazar,
#   amd-gfx list) publishes the SOC and HBM max operating temperatures as temp2_emergency /
#   temp3_emergency, while temp2_crit / temp3_crit "show the throttle temperature limits"; the
#   temp*_crit_hyst files stay hidden on this GPU. The driver asks the firmware for the values at
#   boot (smu_v13_0_6 GetThermalLimit / GetCTFLimit), so they are not constants in the kernel.
# * which values: AMD's amd-smi usage guide shows `amd-smi static` on an Instinct MI300X
#   (amd/MxGPU-Virtualization, smi-lib/docs/how_to/amdsmi_cli_usage.md): SLOWDOWN_HOTSPOT 100 C,
#   SLOWDOWN_MEM 95 C, SHUTDOWN_HOTSPOT 110 C, SHUTDOWN_MEM 105 C. amd-smi reads "slowdown" as the
#   CRITICAL temperature metric and "shutdown" as EMERGENCY (ROCm/amdsmi, amdsmi_commands.py,
#   static --limit), i.e. temp*_crit and temp*_emergency. Real boards report what their firmware
#   says: AMD's MI300A examples in the same docs show HBM at 105/115 C, so these are one MI300X's
#   figures, not a rule for the model.
MI300X_CRIT_C = {"junction": 100.0, "mem": 95.0}
MI300X_EMERGENCY_C = {"junction": 110.0, "mem": 105.0}


@dataclass
class Phase:
    start: float
    end: float
    kind: str


MI300X_TIMELINE = (
    Phase(0, 30, "idle"),
    Phase(30, 70, "load"),
    Phase(70, 95, "warmup"),
    Phase(95, 300, "train"),
    Phase(300, 325, "eval"),
    Phase(325, 560, "train"),
    Phase(560, 600, "checkpoint"),
    Phase(600, 720, "train"),
    Phase(720, 745, "eval"),
    Phase(745, 842, "train"),
    Phase(842, 900, "idle"),
)


def phase_at(timeline: tuple[Phase, ...], t: float) -> Phase:
    for phase in timeline:
        if phase.start <= t < phase.end:
            return phase
    return timeline[-1]


def mi300x_infos() -> list[GpuInfo]:
    rng = random.Random(300942)
    infos = []
    for i, pci in enumerate(MI300X_PCI):
        infos.append(GpuInfo(
            card=f"card{i}",
            pci=pci,
            name="AMD Instinct MI300X",
            device_id=0x74A1,
            revision_id=0x00,
            subsystem=MI300X_SUBSYSTEM,
            gfx_target="gfx942",
            kind=GpuKind.INSTINCT,
            driver="amdgpu",
            vram_total_bytes=MI300X_HBM,
            vbios=MI300X_VBIOS,
            driver_version=KERNEL,
            rocm_version=ROCM_VERSION,
            kfd_node=i + 2,  # two CPU sockets come first in the KFD topology
            render_node=f"renderD{128 + i}",
            unique_id=f"0x{rng.getrandbits(64):016x}",
        ))
    return infos


def mi300x_static() -> dict:
    return {
        "temperature_crit_c": dict(MI300X_CRIT_C),
        "temperature_emergency_c": dict(MI300X_EMERGENCY_C),
        "power_cap_w": MI300X_CAP,
        "power_cap_min_w": 0.0,  # power1_cap_min of the machine
        "power_cap_max_w": MI300X_CAP,
        "power_cap_default_w": MI300X_CAP,
        "vram_total_bytes": MI300X_HBM,
        "gtt_total_bytes": MI300X_GTT,
        "fan_rpm": None,
        "fan_percent": None,
        "voltage_mv": None,
        "performance_level": "auto",
        "power_profile": None,
        "pcie": dict(MI300X_PCIE),
        "unavailable": {
            "temperature_c.edge": "this GPU has no edge sensor",
            "fan_rpm": "no fan on this GPU (passively cooled)",
            "fan_percent": "no fan on this GPU (passively cooled)",
            "voltage_mv": NOT_RECORDED,
            "power_profile": NOT_RECORDED,
        },
    }


@dataclass
class Mi300xState:
    heatsink: float
    junction: float
    mem: float
    hbm: float  # bytes used
    gtt: float


def simulate_mi300x(seed: int = 20251130) -> Recording:
    rng = random.Random(seed)
    infos = mi300x_infos()
    duration = 900
    inlet = [26.0, 27.0, 28.5, 29.5, 26.5, 28.0, 30.0, 29.0]  # air warms along the chassis
    r_heatsink = [0.054, 0.056, 0.055, 0.058, 0.053, 0.057, 0.056, 0.059]  # degC per W
    leakage = [0.0, 4.0, 9.0, 2.0, 6.0, 1.0, 5.0, 3.0]  # W above the idle floor
    shard = [36.4 * GIB + k * 0.05 * GIB for k in range(8)]
    peak = [172.5 * GIB + (k % 3) * 0.6 * GIB for k in range(8)]
    states = [Mi300xState(heatsink=t + 8, junction=t + 10, mem=t + 8, hbm=0.3 * GIB, gtt=180 * MIB) for t in inlet]
    step_phase = 0.0
    frames: list[Frame] = []
    process_info = {
        51200 + k: kfd_process({"pci": MI300X_PCI[k], "name": "pt_main_thread", "user": DEMO_USER,
                                "cmdline": "/opt/venv/bin/python3 -u train.py --config configs/llama-70b-fsdp.yaml"})
        for k in range(8)
    }
    sdma_s = [0.0] * 8  # SDMA time of each rank since it started
    for second in range(2 * duration):
        t = second % duration
        phase = phase_at(MI300X_TIMELINE, t)
        into = t - phase.start
        step_phase = (step_phase + 1.0 / 3.2) % 1.0  # a training step lasts about 3.2 s
        sync_dip = 0.0
        if phase.kind in ("train", "warmup") and step_phase < 0.32:
            sync_dip = rng.uniform(6, 24)  # gradient all-reduce between steps
        gpus = []
        processes = []
        job_running = phase.kind not in ("idle",)
        for k, st in enumerate(states):
            noise = rng.gauss
            if phase.kind == "idle":
                busy, intensity, mem_busy = 0.0, 0.0, 0.0
                hbm_target = 0.3 * GIB
                st.gtt = lag(st.gtt, 180 * MIB, 5)
            elif phase.kind == "load":
                busy = max(0.0, rng.choice((2, 4, 8, 15, 22)) + noise(0, 2))
                intensity, mem_busy = 0.15, rng.uniform(3, 12)
                chunks = min(1.0, math.floor(into / 3.0 + 1) / 13.0)
                hbm_target = 0.3 * GIB + 0.5 * GIB + chunks * shard[k]
                st.gtt = lag(st.gtt, 2.2 * GIB, 6)
            elif phase.kind == "warmup":
                busy = min(100.0, 35 + into * 2.6 + noise(0, 8)) - sync_dip * 0.5
                intensity, mem_busy = 0.45 + into / 25 * 0.55, rng.uniform(15, 40)
                hbm_target = 0.8 * GIB + shard[k] + (peak[k] - shard[k]) * min(1.0, into / 18)
                st.gtt = lag(st.gtt, 1.1 * GIB, 8)
            elif phase.kind == "train":
                busy = 100.0 - sync_dip - abs(noise(0, 1.5))
                intensity = 1.06 + noise(0, 0.03) + 0.02 * math.sin(2 * math.pi * t / 47)
                mem_busy = 38 + noise(0, 6) - sync_dip * 0.8
                hbm_target = 0.8 * GIB + peak[k] + noise(0, 0.15) * GIB
                st.gtt = lag(st.gtt, 1.1 * GIB, 8)
            elif phase.kind == "eval":
                busy = 62 + noise(0, 9)
                intensity, mem_busy = 0.62 + noise(0, 0.04), 24 + noise(0, 5)
                hbm_target = 0.8 * GIB + peak[k] + 4.2 * GIB
                st.gtt = lag(st.gtt, 1.1 * GIB, 8)
            else:  # checkpoint: FSDP gathers and writes shards through pinned host memory
                busy = max(0.0, 4 + noise(0, 2.5))
                intensity, mem_busy = 0.08, rng.uniform(2, 9)
                hbm_target = st.hbm
                st.gtt = lag(st.gtt, 9.5 * GIB, 4)
            busy = min(100.0, max(0.0, busy))
            mem_busy = min(100.0, max(0.0, mem_busy))
            hbm_before = st.hbm
            st.hbm = hbm_target if hbm_target <= st.hbm or phase.kind != "warmup" else lag(st.hbm, hbm_target, 3)
            if phase.kind == "idle":
                st.hbm = hbm_target
            idle_floor = (128.0 if not job_running else 168.0) + leakage[k] + (st.junction - 40) * 0.35
            demand = idle_floor + (busy / 100.0) * 640.0 * intensity + noise(0, 4)
            if demand > MI300X_CAP:
                power = MI300X_CAP - abs(noise(0, 3.0)) + (2.0 if rng.random() < 0.15 else 0.0)
                ratio = (MI300X_CAP - 110.0) / (demand - 110.0)
                sclk = 2100 * ratio ** 0.45 + noise(0, 12)
            else:
                power = demand
                sclk = 2100 + noise(0, 4) if job_running else 132 + rng.choice((0, 0, 1, 2))
            mclk = 1300 if job_running and (busy > 3 or phase.kind != "idle") else 900
            st.heatsink = lag(st.heatsink, inlet[k] + r_heatsink[k] * power, 70.0)
            st.junction = lag(st.junction, st.heatsink + 0.017 * power, 3.5)
            st.mem = lag(st.mem, inlet[k] + 0.86 * (st.heatsink - inlet[k]) + 0.09 * mem_busy, 25.0)
            gpus.append({
                "temperature_c": {"junction": float(round(st.junction + noise(0, 0.3))),
                                  "mem": float(round(st.mem + noise(0, 0.2)))},
                "power_w": float(round(power)),
                "vram_used_bytes": page(st.hbm),
                "gtt_used_bytes": page(st.gtt),
                "gpu_busy_percent": round(busy),
                "mem_busy_percent": round(mem_busy),
                "sclk_mhz": round(sclk),
                "mclk_mhz": mclk,
                "throttle": PPT_THROTTLE if demand > MI300X_CAP else NOT_THROTTLED,
            })
            if job_running:
                if phase.kind == "load":
                    copied = max(0.0, st.hbm - hbm_before)  # weights read from disk into HBM
                elif phase.kind == "checkpoint":
                    copied = 0.92 * GIB * rng.uniform(0.7, 1.1)  # shards out to pinned host memory
                else:
                    copied = rng.uniform(4, 9) * MIB  # the next input batches
                if t == phase_at(MI300X_TIMELINE, 0).end:
                    sdma_s[k] = 0.0  # the job (re)starts: a new process
                sdma_s[k] += copied / SDMA_BYTES_PER_S
                if rng.random() < busy / 100.0:  # the snapshot catches its kernels running
                    cu = math.ceil(MI300X_CUS * rng.uniform(*MI300X_WAVE_FILL[phase.kind]))
                elif job_running and phase.kind in ("train", "warmup", "eval") and rng.random() < 0.85:
                    cu = rng.randint(8, 40)  # between compute kernels: an RCCL all-reduce on a few CUs
                else:
                    cu = 0  # nothing in flight at that instant
                processes.append({"pid": 51200 + k, "vram_bytes": page(max(0.0, st.hbm - 0.3 * GIB)),
                                  "cu_occupied": cu, "cu_occupancy_percent": cu_percent(cu, MI300X_CUS),
                                  "sdma_us": round(sdma_s[k] * 1e6)})
        if second >= duration:
            frames.append(Frame(t=float(t), gpus=gpus, processes=processes))
    return Recording(
        name="mi300x-node",
        title="8 × AMD Instinct MI300X node training an LLM (demo recording)",
        description="A synthetic 15-minute recording of an 8-GPU MI300X node: idle, a data-parallel "
                    "training job starting (weights loaded into HBM, warm-up), steady power-capped "
                    "training with evaluation passes and a checkpoint save, the job ending.",
        gpus=infos,
        static=[mi300x_static() for _ in infos],
        frames=frames,
        interval_s=1.0,
        demo=True,
        process_info=process_info,
        meta={"synthetic": True, "generator": "tools/make_demo.py", "seed": seed},
    )


# -- RX 7900 XTX workstation running ComfyUI -------------------------------------------------

XTX_VRAM = 25753026560
XTX_CAP = 290.0  # power1_cap (and power1_cap_default) of the LACT rx7900xtx dump the demo machine holds
XTX_FAN_MAX = 3200  # fan1_max of the LACT rx7900xtx dump
COMFY_PID = 48213
COMFY_CMDLINE = f"/home/{DEMO_USER}/ComfyUI/venv/bin/python3 main.py --listen 127.0.0.1 --port 8188"


def comfy_timeline() -> list[tuple[float, float, str]]:
    """(start, end, activity) covering 0..900 s: idle, load, per-image encode/sample/decode/save."""
    events: list[tuple[float, float, str]] = [(0, 45, "idle"), (45, 59, "load")]
    t = 59.0
    groups = ((4, 70), (6, 95), (8, 80), (4, 70))  # images per queue run, idle pause after it
    for images, pause in groups:
        for _ in range(images):
            events += [(t, t + 1, "encode"), (t + 1, t + 14, "sample"), (t + 14, t + 17, "decode"),
                       (t + 17, t + 18, "save")]
            t += 18
        events.append((t, t + pause, "resident"))
        t += pause
    events += [(t, t + 2, "unload"), (t + 2, 900.0, "idle")]
    return events


def activity_at(events: list[tuple[float, float, str]], t: float) -> tuple[str, float]:
    for start, end, what in events:
        if start <= t < end:
            return what, t - start
    return "idle", 0.0


def xtx_info() -> GpuInfo:
    return GpuInfo(
        card="card0", pci="0000:03:00.0", name="AMD Radeon RX 7900 XTX", device_id=0x744C,
        revision_id=0xC8, subsystem="1da2:e471", gfx_target="gfx1100", kind=GpuKind.DISCRETE,
        driver="amdgpu", vram_total_bytes=XTX_VRAM, vbios="113-D70401XT-N11",
        driver_version=KERNEL, rocm_version=ROCM_VERSION, kfd_node=1, render_node="renderD128",
        unique_id=None,
    )


def xtx_static() -> dict:
    return {
        "temperature_crit_c": {"edge": 100.0, "junction": 110.0, "mem": 108.0},
        "temperature_emergency_c": {"edge": 105.0, "junction": 115.0, "mem": 113.0},
        "power_cap_w": XTX_CAP,
        "power_cap_min_w": 261.0,
        "power_cap_max_w": 333.0,
        "power_cap_default_w": XTX_CAP,
        "vram_total_bytes": XTX_VRAM,
        "gtt_total_bytes": 32 * GIB,
        "performance_level": "auto",
        "pcie": {"speed_gts": 16.0, "width": 16, "max_speed_gts": 16.0, "max_width": 16},  # PCIe 4.0 x16
        "unavailable": {},
    }


def simulate_xtx(seed: int = 20251201) -> Recording:
    rng = random.Random(seed)
    events = comfy_timeline()
    duration = 900
    inlet = 31.0
    heatsink, junction, mem = 40.0, 42.0, 48.0
    fan_pct, fan_on = 0.0, False
    desktop_vram = 0.62 * GIB
    comfy_context = 0.36 * GIB
    model = 0.0  # bytes of checkpoint resident
    cache = 0.0  # torch caching allocator reserve
    gtt = 95 * MIB
    frames: list[Frame] = []
    info = xtx_info()
    process_info = {
        COMFY_PID: kfd_process({"pci": info.pci, "name": "python3", "user": DEMO_USER, "cmdline": COMFY_CMDLINE},
                               cu_supported=False),
        2011: drm_process({"pci": info.pci, "name": "gnome-shell", "user": DEMO_USER,
                           "cmdline": "/usr/bin/gnome-shell"}),
        2290: drm_process({"pci": info.pci, "name": "Xwayland", "user": DEMO_USER,
                           # the X authority file's path is a secret the capture removes (report/scrub.py)
                           "cmdline": "/usr/bin/Xwayland :0 -rootless -noreset -accessx -core -auth <redacted>"}),
        3120: drm_process({"pci": info.pci, "name": "firefox", "user": DEMO_USER,
                           "cmdline": "/usr/lib/firefox/firefox http://127.0.0.1:8188/"}),
    }
    comfy_sdma_s = 0.0
    checkpoint = 6.94 * GIB  # SDXL UNet + text encoders + VAE
    for second in range(2 * duration):
        t = second % duration
        what, into = activity_at(events, t)
        noise = rng.gauss
        desktop_busy = max(0.0, rng.choice((0, 0, 1, 2, 3, 5)) + noise(0, 0.5))
        vae_extra = 0.0
        if what == "idle":
            busy, mem_busy, demand = desktop_busy, rng.uniform(0, 3), 17.0 + desktop_busy * 1.2
            model, cache = 0.0, 0.0
        elif what == "load":
            busy, mem_busy = rng.uniform(8, 30), rng.uniform(5, 20)
            demand = 55 + busy * 0.8
            model = min(checkpoint, checkpoint * (math.floor(into / 1.5) + 1) / 9)
        elif what == "encode":
            busy, mem_busy, demand = rng.uniform(55, 80), rng.uniform(20, 35), 190 + noise(0, 15)
            model = checkpoint
        elif what == "sample":
            busy, mem_busy = 100.0 - abs(noise(0, 1.2)), 44 + noise(0, 5)
            demand = 345 + noise(0, 10)
            cache = max(cache, 2.45 * GIB)
        elif what == "decode":
            busy, mem_busy = 100.0 - abs(noise(0, 0.6)), 72 + noise(0, 6)
            demand = 248 + noise(0, 9)  # memory-bound: busy, but below the cap
            vae_extra = 3.2 * GIB if into < 2.5 else 1.1 * GIB
        elif what == "save":
            busy, mem_busy, demand = rng.uniform(2, 9), rng.uniform(1, 6), 48 + noise(0, 6)
        elif what == "resident":
            busy, mem_busy, demand = desktop_busy, rng.uniform(0, 3), 24 + desktop_busy * 1.2
        else:  # unload: ComfyUI frees the models and empties the cache
            busy, mem_busy, demand = rng.uniform(1, 6), rng.uniform(0, 4), 30.0
            model, cache = 0.0, 0.0
        busy = min(100.0, max(0.0, busy))
        mem_busy = min(100.0, max(0.0, mem_busy))
        demand += (junction - 50) * 0.12  # leakage grows with temperature
        if demand > XTX_CAP:
            power = XTX_CAP - abs(noise(0, 2.2)) + (1.0 if rng.random() < 0.2 else 0.0)
            ratio = (XTX_CAP - 40.0) / (demand - 40.0)
            sclk = 2498 * ratio ** 0.45 + noise(0, 15)
        else:
            power = max(8.0, demand + noise(0, 1.5))
            if busy > 40:
                sclk = 2498 + noise(0, 6)
            elif busy > 5:
                sclk = rng.uniform(900, 2100)
            else:
                sclk = rng.choice((25, 31, 31, 31, 48, 57))  # deep sleep: the LACT dump reads 31 MHz at idle
        if busy > 40 or mem_busy > 30:
            mclk = 1249
        elif busy > 5:
            mclk = rng.choice((772, 1249))
        else:
            mclk = rng.choice((96, 96, 96, 456))
        # fan: zero-RPM below ~50 degC edge, starts at 60 degC junction, follows junction, slew-limited
        if not fan_on and junction > 60:
            fan_on = True
        elif fan_on and heatsink < 50 and junction < 55:
            fan_on = False
        target_fan = min(78.0, max(22.0, 22 + (junction - 60) * 1.6)) if fan_on else 0.0
        fan_pct = min(fan_pct + 3.0, target_fan) if target_fan > fan_pct else max(fan_pct - 2.0, target_fan)
        r_heatsink = 0.19 - 0.105 * (fan_pct / 78.0)
        heatsink = lag(heatsink, inlet + r_heatsink * power, 45.0)
        junction = lag(junction, heatsink + 0.085 * power, 2.0)
        mem = lag(mem, heatsink + 5.5 + 0.12 * mem_busy, 18.0)
        pwm = round(fan_pct / 100 * 255)
        rpm = 0 if pwm == 0 else round(pwm / 255 * XTX_FAN_MAX * 0.96 + noise(0, 12))
        comfy_vram = comfy_context + model + cache + vae_extra
        gtt = lag(gtt, (420 * MIB if what in ("load", "decode", "save") else 95 * MIB), 4)
        vram_used = desktop_vram + comfy_vram + noise(0, 2) * MIB
        voltage = 720 + (sclk / 2498) * 390 + noise(0, 6) if busy > 5 else 686 + rng.choice((-3, 0, 0, 4))
        computing = what in ("load", "encode", "sample", "decode", "save")
        sample = {
            "temperature_c": {"edge": float(round(heatsink + noise(0, 0.3))),
                              "junction": float(round(junction + noise(0, 0.6))),
                              "mem": float(round(mem + noise(0, 0.3)))},
            "power_w": float(round(power)),
            "vram_used_bytes": page(vram_used),
            "gtt_used_bytes": page(gtt),
            "gpu_busy_percent": round(busy),
            "mem_busy_percent": round(mem_busy),
            "sclk_mhz": max(0, round(sclk)),
            "mclk_mhz": mclk,
            "fan_rpm": max(0, rpm),
            "fan_percent": round(pwm / 255 * 100, 1),
            "voltage_mv": float(round(voltage)),
            "throttle": PPT_THROTTLE if demand > XTX_CAP else NOT_THROTTLED,
            "power_profile": "COMPUTE" if computing or (what == "resident" and into < 5) else "BOOTUP_DEFAULT",
        }
        if what == "load":
            comfy_sdma_s += checkpoint / 9 / 1.5 / SDMA_BYTES_PER_S  # checkpoint chunks into VRAM
        elif what in ("encode", "save"):
            comfy_sdma_s += rng.uniform(2, 16) * MIB / SDMA_BYTES_PER_S  # prompt in, image out
        processes = [
            {"pid": 2011, "vram_bytes": page(0.21 * GIB), "gtt_bytes": page(38 * MIB),
             "gpu_percent": float(round(desktop_busy * 0.6, 1))},
            {"pid": 2290, "vram_bytes": page(0.05 * GIB), "gtt_bytes": page(6 * MIB), "gpu_percent": 0.0},
            {"pid": 3120, "vram_bytes": page(0.17 * GIB), "gtt_bytes": page(22 * MIB),
             "gpu_percent": float(round(desktop_busy * 0.4, 1))},
            {"pid": COMFY_PID, "vram_bytes": page(comfy_vram), "sdma_us": round(comfy_sdma_s * 1e6)},
        ]
        if second >= duration:
            frames.append(Frame(t=float(t), gpus=[sample], processes=processes))
    return Recording(
        name="rx7900xtx-comfyui",
        title="AMD Radeon RX 7900 XTX workstation running ComfyUI (demo recording)",
        description="A synthetic 15-minute recording of a desktop with an RX 7900 XTX: idle, ComfyUI "
                    "loading an SDXL checkpoint into VRAM, queues of images (sampling steps at the "
                    "power cap, VAE decode), pauses with the model resident, models unloaded, idle.",
        gpus=[info],
        static=[xtx_static()],
        frames=frames,
        interval_s=1.0,
        demo=True,
        process_info=process_info,
        meta={"synthetic": True, "generator": "tools/make_demo.py", "seed": seed},
    )


def main(argv: list[str] | None = None) -> int:
    out_dir = Path(argv[0]) if argv else REPO / "resources" / "demo"
    out_dir.mkdir(parents=True, exist_ok=True)
    for recording in (simulate_mi300x(), simulate_xtx()):
        path = out_dir / f"{recording.name}.jsonl.gz"
        write_recording(path, recording)
        print(f"{path}: {len(recording.frames)} samples, {path.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
