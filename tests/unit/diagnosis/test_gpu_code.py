"""gpu_code: gfx targets from rocBLAS folders and libtorch_hip.so offload bundles (synthetic files, real layouts)."""

from __future__ import annotations

from rocmdesk.diagnosis import gpu_code
from rocmdesk.diagnosis.gpu_code import bundle_targets, library_targets, targets_in_names
from rocmdesk.host import HostRoot
from tests.support.rocm_libs import compressed_bundle, elf_with_fatbin, offload_bundle, tensile_folder


def test_names_give_targets_and_nothing_else():
    assert targets_in_names(["TensileLibrary_lazy_gfx1100.dat", "Kernels.so-000-gfx90a.hsaco", "gfx942",
                             "TensileLibrary_fallback.dat", "gfx11-generic", "xgfx1030"]) == {
        "gfx1100", "gfx90a", "gfx942"}


def test_bundle_ids_and_compression():
    assert bundle_targets(offload_bundle(["gfx1100", "gfx90a"])) == ({"gfx1100", "gfx90a"}, False)
    assert bundle_targets(compressed_bundle()) == (frozenset(), True)


def test_library_targets_reads_rocblas_and_bundles(tmp_path):
    site = tmp_path / "venv/lib/python3.12/site-packages"
    tensile_folder(site / "torch/lib/rocblas/library", ["gfx1030", "gfx1100"])
    elf_with_fatbin(site / "torch/lib/libtorch_hip.so", offload_bundle(["gfx1030", "gfx1100", "gfx942"]) * 3)
    code = library_targets(HostRoot(tmp_path), "/venv/lib/python3.12/site-packages")
    assert code.rocblas == {"gfx1030", "gfx1100"}
    assert code.kernels == {"gfx1030", "gfx1100", "gfx942"}


def test_bundles_past_the_cap_are_not_read(tmp_path, monkeypatch):
    monkeypatch.setattr(gpu_code, "MAX_FATBIN_BYTES", 4096)
    monkeypatch.setattr(gpu_code, "CHUNK", 1024)
    site = tmp_path / "site"
    elf_with_fatbin(site / "torch/lib/libtorch_hip.so", offload_bundle(["gfx1100"]), padding=10000)
    code = library_targets(HostRoot(tmp_path), "/site")
    assert code.kernels is None


def test_id_split_across_chunks_is_found(tmp_path, monkeypatch):
    monkeypatch.setattr(gpu_code, "CHUNK", 1024)
    site = tmp_path / "site"
    elf_with_fatbin(site / "torch/lib/libtorch_hip.so", offload_bundle(["gfx1201"]), padding=1024 - 40)
    assert library_targets(HostRoot(tmp_path), "/site").kernels == {"gfx1201"}


def test_compressed_or_broken_libraries_say_so(tmp_path):
    site = tmp_path / "site"
    elf_with_fatbin(site / "torch/lib/libtorch_hip.so", compressed_bundle())
    code = library_targets(HostRoot(tmp_path), "/site")
    assert code.kernels is None and any("compressed" in n for n in code.notes)
    (site / "torch/lib/libtorch_hip.so").write_bytes(b"\x7fELF")  # truncated
    code = library_targets(HostRoot(tmp_path), "/site")
    assert code.kernels is None and any("no readable .hip_fatbin" in n for n in code.notes)
    (site / "torch/lib/rocblas/library").mkdir(parents=True)
    assert library_targets(HostRoot(tmp_path), "/site").rocblas is None


def test_therock_library_wheel_layout(tmp_path):
    site = tmp_path / "site"
    tensile_folder(site / "_rocm_sdk_libraries_gfx110X_dgpu/lib/rocblas/library", ["gfx1100", "gfx1101", "gfx1102"])
    (site / "_rocm_sdk_libraries_gfx110X_dgpu/lib/hipblaslt/library/gfx1100").mkdir(parents=True)
    code = library_targets(HostRoot(tmp_path), "/site")
    assert code.rocblas == {"gfx1100", "gfx1101", "gfx1102"}
    assert any(s.how.startswith("hipBLASLt") for s in code.sources)
