"""Strict parsers: each accepts exactly what the kernel writes and names what it rejects."""

from __future__ import annotations

import pytest

from rocmdesk.telemetry import parsers
from rocmdesk.telemetry.parsers import ValueProblem

F17_NAVI = ("PROFILE_INDEX(NAME) CLOCK_TYPE(NAME) FPS MinFreqType MinActiveFreqType MinActiveFreq BoosterFreqType "
            "BoosterFreq PD_Data_limit_c PD_Data_error_coeff PD_Data_error_rate_coeff\n") + """ 0 BOOTUP_DEFAULT*:
                    0(       GFXCLK)       0       5       1       0       4     800 4587520  -65536       0
                    1(       SOCCLK)       0       5       1       0       1       0 3276800  -65536   -6553
                    2(       MEMCLK)       0       5       1       0       4     800  327680  -65536       0
 1 3D_FULL_SCREEN :
                    0(       GFXCLK)       0       5       0    1600       4     650 5242880   -3276       0
                    1(       SOCCLK)       0       5       1       0       1       0  655360  -65536   -6553
                    2(       MEMCLK)       0       5       4     850       4     800  327680  -65536       0
"""

F17_VEGA = """NUM        MODE_NAME BUSY_SET_POINT FPS USE_RLC_BUSY MIN_ACTIVE_LEVEL
  0 BOOTUP_DEFAULT :             70  60          0              0
  1 3D_FULL_SCREEN :             70  60          1              3
  2   POWER_SAVING :             90  60          0              0
  3          VIDEO :             70  60          0              0
  4             VR :             70  90          0              0
  5        COMPUTE*:             30  60          0              6
  6         CUSTOM :              0   0          0              0
"""

SMU13_ROW = ("                              0 BOOTUP_DEFAULT  1 3D_FULL_SCREEN  2 POWER_SAVING    "
             "3 VIDEO           4 VR            * 5 COMPUTE         6 CUSTOM          7 WINDOW_3D       \n"
             "Gfx_FPS                       0                 0                 0\n")


@pytest.mark.parametrize(("text", "value"), [("42\n", 42), ("0", 0), (" 7 \n", 7), ("18446744073709551615", 2**64 - 1),
                                             ("56000\n\x00\x00\x00", 56000)])
def test_parse_int_accepts(text, value):
    assert parsers.parse_int(text) == value


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty file"),
        ("   \n", "empty file"),
        ("123abc", "garbage value '123abc'"),
        ("12ab", "garbage value '12ab'"),
        ("-5", "garbage value '-5'"),
        ("18446744073709551616", "garbage value '18446744073709551616'"),
        ("1.5", "garbage value '1.5'"),
        ("0x10", "garbage value '0x10'"),
        ("1 2", "garbage value '1 2'"),
    ],
)
def test_parse_int_rejects(text, reason):
    with pytest.raises(ValueProblem) as err:
        parsers.parse_int(text)
    assert str(err.value) == reason


def test_long_garbage_is_shortened():
    with pytest.raises(ValueProblem) as err:
        parsers.parse_int("x" * 500)
    assert len(str(err.value)) < 60


def test_units():
    assert parsers.millidegrees_to_c("45999\n") == 45.999
    assert parsers.millidegrees_to_c("-5000") == -5.0
    assert parsers.microwatts_to_w("68000000\n") == 68.0
    assert parsers.microwatts_to_w("3142000") == 3.142
    assert parsers.hertz_to_mhz("798080000") == 798
    assert parsers.percent("100") == 100


@pytest.mark.parametrize(
    ("parse", "text", "reason"),
    [
        (parsers.millidegrees_to_c, "-273150", "out of range value '-273150'"),
        (parsers.millidegrees_to_c, "4294967295000", "out of range value '4294967295000'"),
        (parsers.microwatts_to_w, "-1", "garbage value '-1'"),
        (parsers.microwatts_to_w, "99999999999999", "out of range value '99999999999999'"),
        (parsers.percent, "101", "out of range value '101'"),
        (parsers.percent, "-3", "garbage value '-3'"),
    ],
)
def test_units_reject(parse, text, reason):
    with pytest.raises(ValueProblem) as err:
        parse(text)
    assert str(err.value) == reason


def test_dpm_tables():
    assert parsers.active_dpm_mhz("0: 300Mhz\n1: 600Mhz\n2: 900Mhz *\n3: 1145Mhz\n") == 900
    # RDNA3 shows the current clock as a middle level; RDNA4 has an "S:" sleep level.
    assert parsers.active_dpm_mhz("0: 500Mhz\n1: 31Mhz *\n2: 2219Mhz\n") == 31
    assert parsers.active_dpm_mhz("S: 500Mhz\n1: 789Mhz *\n2: 2070Mhz\n") == 789
    assert parsers.active_dpm_mhz("0: 255Mhz\n1: 0Mhz *\n2: 1841Mhz\n") == 0
    # Two levels marked (Van Gogh mclk): the first wins.
    assert parsers.active_dpm_mhz("0: 400Mhz \n1: 600Mhz \n2: 687Mhz *\n3: 688Mhz *\n") == 687
    assert parsers.active_dpm_mhz("0: 300Mhz\n1: 1900Mhz\n") is None
    assert parsers.active_dpm_mhz("") is None
    levels = parsers.parse_dpm_table("0: 96Mhz *\n1: 456Mhz \n")
    assert [(lv.level, lv.mhz, lv.active) for lv in levels] == [("0", 96, True), ("1", 456, False)]
    with pytest.raises(ValueProblem):
        parsers.active_dpm_mhz("0: fastMhz *\n")


def test_power_profiles_all_layouts():
    assert parsers.active_power_profile(F17_NAVI) == "BOOTUP_DEFAULT"
    assert [p.name for p in parsers.parse_power_profiles(F17_NAVI)] == ["BOOTUP_DEFAULT", "3D_FULL_SCREEN"]
    assert parsers.active_power_profile(F17_VEGA) == "COMPUTE"
    assert len(parsers.parse_power_profiles(F17_VEGA)) == 7
    # Navi 33: "4 VR            * " — the star follows VR's padding, it is not COMPUTE's.
    assert parsers.active_power_profile(SMU13_ROW) == "VR"
    assert parsers.active_power_profile(" 0 BOOTUP_DEFAULT  1 3D_FULL_SCREEN* 2 VIDEO  \n") == "3D_FULL_SCREEN"
    # Polaris: "  1 3D_FULL_SCREEN *:".
    assert parsers.active_power_profile(
        "NUM        MODE_NAME     SCLK_UP_HYST\n  0   BOOTUP_DEFAULT:        -\n  1 3D_FULL_SCREEN *:   0\n"
    ) == "3D_FULL_SCREEN"


def test_power_profile_problems():
    with pytest.raises(ValueProblem, match="no active profile"):
        parsers.active_power_profile(" 1 3D_FULL_SCREEN \n 3          VIDEO \n")
    with pytest.raises(ValueProblem, match="empty file"):
        parsers.active_power_profile("")
    with pytest.raises(ValueProblem, match="garbage"):
        parsers.active_power_profile("hello world\n")


@pytest.mark.parametrize(
    ("value", "target"),
    [(90010, "gfx90a"), (90402, "gfx942"), (110000, "gfx1100"), (100300, "gfx1030"), (90008, "gfx908"),
     (110003, "gfx1103"), (120001, "gfx1201"), (80003, "gfx803"), (90012, "gfx90c"), (0, None)],
)
def test_decode_gfx_target_version(value, target):
    assert parsers.decode_gfx_target_version(value) == target


def test_location_id():
    assert parsers.pci_location_id("0000:03:00.0") == (0, 0x300)
    assert parsers.pci_location_id("0001:c1:1f.7") == (1, (0xC1 << 8) | (0x1F << 3) | 7)
    assert parsers.pci_location_id("garbage") is None


def test_kfd_properties_and_uevent():
    props = parsers.parse_kfd_properties("cpu_cores_count 0\ngfx_target_version 90402\nbroken\nx y z\nneg -1\n")
    assert props == {"cpu_cores_count": 0, "gfx_target_version": 90402, "neg": -1}
    assert parsers.parse_uevent("DRIVER=amdgpu\nPCI_ID=1002:744C\nnoise\n") == {"DRIVER": "amdgpu",
                                                                                "PCI_ID": "1002:744C"}


def test_ids_words_lines():
    assert parsers.parse_hex_id("0x1002\n") == 0x1002
    with pytest.raises(ValueProblem):
        parsers.parse_hex_id("1002")
    with pytest.raises(ValueProblem):
        parsers.parse_hex_id("0x10020")
    assert parsers.parse_word("auto\n") == "auto"
    with pytest.raises(ValueProblem):
        parsers.parse_word("auto manual")
    assert parsers.parse_line("113-D70401XT-N11\n") == "113-D70401XT-N11"
    with pytest.raises(ValueProblem):
        parsers.parse_line("\n")
