"""Synthetic gpu_metrics tables laid out by ctypes (the platform C compiler's rules), independent of the
decoder's own layout code: filled with 0xFF first, as the driver does, then the given fields."""

from __future__ import annotations

import ctypes

from rocmdesk.telemetry import gpu_metrics

_CTYPES = {"B": ctypes.c_uint8, "H": ctypes.c_uint16, "I": ctypes.c_uint32, "Q": ctypes.c_uint64}


def ctypes_struct(revision: tuple[int, int]) -> type[ctypes.LittleEndianStructure]:
    spec, _size = gpu_metrics._TABLES[revision]
    fields: list[tuple[str, type]] = [("structure_size", ctypes.c_uint16), ("format_revision", ctypes.c_uint8),
                                      ("content_revision", ctypes.c_uint8)]
    for n, item in enumerate(spec.split()):
        name, kind = item.split(":")
        if kind.startswith("bytes="):
            fields.append((f"_skip{n}", ctypes.c_uint64 * (int(kind[6:]) // 8)))
            continue
        code, _, count = kind.partition("*")
        ctype = _CTYPES[code] * int(count) if count else _CTYPES[code]
        fields.append((name if name != "_" else f"_pad{n}", ctype))
    return type(f"gpu_metrics_v{revision[0]}_{revision[1]}", (ctypes.LittleEndianStructure,), {"_fields_": fields})


def synthetic_table(revision: tuple[int, int], **values) -> bytes:
    cls = ctypes_struct(revision)
    table = cls()
    ctypes.memset(ctypes.addressof(table), 0xFF, ctypes.sizeof(cls))
    table.structure_size, table.format_revision, table.content_revision = ctypes.sizeof(cls), *revision
    for name, value in values.items():
        if isinstance(value, list):
            array = getattr(table, name)
            for i, item in enumerate(value):
                array[i] = item
        else:
            setattr(table, name, value)
    return bytes(table)


def mi300x_table(junction: int = 55) -> bytes:
    """A gpu_metrics 1.6 table as an idle MI300X fills it (8 XCD clocks, HBM and VR SoC temperatures)."""
    return synthetic_table((1, 6), temperature_hotspot=junction, temperature_mem=44, temperature_vrsoc=38,
                           curr_socket_power=140, average_gfx_activity=0, average_umc_activity=0,
                           energy_accumulator=123456789, current_gfxclk=[132] * 8, current_socclk=[1143] * 4,
                           current_vclk0=[29] * 4, current_dclk0=[22] * 4, current_uclk=900,
                           pcie_link_width=16, pcie_link_speed=320, num_partition=1)
