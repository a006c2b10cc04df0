"""How to name GPUs in ROCR_VISIBLE_DEVICES: by the agent UUID where the driver exposes one, else by index.

ROCr names a GPU agent "GPU-" + the KFD node's ``unique_id`` as 16 lower-case hex digits (ROCR-Runtime
src/core/runtime/amd_gpu_agent.cpp, HSA_AMD_AGENT_INFO_UUID: ``"GPU-%016" PRIx64``); a node whose unique_id is 0 has
no UUID (older GPUs and many iGPUs), and then only the index works: the GPU agents in KFD node order, from 0
(ROCm docs conceptual/gpu-isolation: ROCR_VISIBLE_DEVICES takes indices or UUIDs and applies to every ROCm
program).
"""

from __future__ import annotations

from collections.abc import Sequence

from rocmdesk.diagnosis.facts import HostFacts
from rocmdesk.diagnosis.pci_kfd import GpuFact


def agent_uuid(gpu: GpuFact) -> str | None:
    if not gpu.unique_id or gpu.unique_id < 0 or gpu.unique_id >= 1 << 64:
        return None
    return f"GPU-{gpu.unique_id:016x}"


def agent_index(facts: HostFacts, gpu: GpuFact) -> int | None:
    """The GPU's place among the GPU agents (KFD GPU nodes by node id), from 0; None without a KFD node."""
    nodes = [n.node_id for n in facts.kfd_gpu_nodes]
    return nodes.index(gpu.kfd_node) if gpu.kfd_node in nodes else None


def visible_devices_value(facts: HostFacts, keep: Sequence[GpuFact]) -> tuple[str, str] | None:
    """(ROCR_VISIBLE_DEVICES value that leaves exactly ``keep`` visible, how it names them); None when a GPU to keep
    has no KFD node. UUIDs when every kept GPU has one: they survive a change of slot or a GPU added later."""
    uuids = [agent_uuid(g) for g in keep]
    if keep and all(uuids):
        return ",".join(u for u in uuids if u), "by agent UUID (check with `rocminfo | grep -i uuid`)"
    indices = [agent_index(facts, g) for g in keep]
    if not keep or any(i is None for i in indices):
        return None
    return (",".join(str(i) for i in indices),
            "by index: the driver exposes no UUID for these GPUs; the index is the GPU's place among the GPU agents "
            "`rocminfo` lists, from 0")
