"""pp_power_profile_mode read once, the same way for telemetry and the Tuning tab, on LACT's real dumps.

The expected tables are LACT's own readings of the same files (ilya-zlobintsev/LACT,
lact-daemon/src/tests/snapshots/lact_daemon__tests__amd__rx7600s.snap at fe044852: "power_profile_modes"
"active": 4, modes 0-7). The RX 7600S is SMU 13.0.7 (Navi 33): every profile on the header row, the active
one marked "*" after the name's padding ("4 VR            * "), which the Tuning tab used to misread."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocmdesk.fixes.tuning_state import parse_profiles
from rocmdesk.telemetry.parsers import active_power_profile, parse_power_profiles

DUMPS = Path(__file__).resolve().parents[2] / "data" / "lact-sysfs"
SMU13_NAMES = {0: "BOOTUP_DEFAULT", 1: "3D_FULL_SCREEN", 2: "POWER_SAVING", 3: "VIDEO", 4: "VR", 5: "COMPUTE",
               6: "CUSTOM", 7: "WINDOW_3D"}


def _table(name: str) -> str:
    return next((DUMPS / name).glob("card*/device/pp_power_profile_mode")).read_text()


def test_smu_13_0_7_layout_as_lact_reads_it():
    text = _table("rx7600s")
    assert text.splitlines()[0].startswith(" " * 30 + "0 BOOTUP_DEFAULT")  # the real header row
    assert parse_profiles(text) == (SMU13_NAMES, 4)
    assert active_power_profile(text) == "VR"


def test_smu_13_0_7_first_profile_active():
    assert parse_profiles(_table("rx7700s")) == (SMU13_NAMES, 0)


@pytest.mark.parametrize("name", sorted(p.parent.parent.parent.name
                                        for p in DUMPS.glob("*/card*/device/pp_power_profile_mode")))
def test_tuning_tab_and_telemetry_agree_on_every_dump(name):
    text = _table(name)
    profiles = parse_power_profiles(text)
    table, active = parse_profiles(text)
    assert table == {p.index: p.name for p in profiles} and table
    assert active == next((p.index for p in profiles if p.active), None)
    # the tuning state strips the file (tuning_state._read): the same table either way
    assert parse_profiles(text.strip()) == (table, active)


def test_no_active_marker_and_garbage():
    assert parse_profiles(_table("vangogh"))[1] is None  # LACT: "power_profile_modes": null for this APU
    assert parse_profiles("") == ({}, None)
    assert parse_profiles("not a table\n\x00\x00") == ({}, None)
