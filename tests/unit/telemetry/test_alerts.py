"""Alert rules: each event once per cooldown, throttling only when it lasts, a vanished GPU, ECC growth."""

from __future__ import annotations

from rocmdesk.telemetry.alerts import AlertEngine, AlertRules, hottest, notify_argv
from rocmdesk.telemetry.model import GpuInfo, GpuSample, Snapshot

A = GpuInfo(card="card0", pci="0000:03:00.0", name="RX 7900 XTX")
B = GpuInfo(card="card1", pci="0000:0c:00.0", name="MI300X")


def gpu(info, junction=60.0, crit=110.0, throttle=None, ue=None):
    sample = GpuSample(info=info, timestamp=0.0, temperature_c={"junction": junction},
                       temperature_crit_c={"junction": crit}, throttle=throttle)
    if ue is not None:
        sample.ras = {"blocks": {}, "uncorrectable": ue, "correctable": 0}
    return sample


def snap(*gpus):
    return Snapshot(backend="sysfs", timestamp=0.0, gpus=list(gpus))


def test_over_crit_alerts_once_per_cooldown():
    engine = AlertEngine(AlertRules(cooldown_s=300))
    assert [a.kind for a in engine.feed(snap(gpu(A, 111)), now=0)] == ["over-crit"]
    assert engine.feed(snap(gpu(A, 112)), now=10) == []  # still hot: rate-limited
    alerts = engine.feed(snap(gpu(A, 111)), now=400)
    assert [a.kind for a in alerts] == ["over-crit"] and alerts[0].urgency == "critical"
    assert "111 °C" in alerts[0].summary and "110 °C" in alerts[0].body


def test_throttling_alerts_only_when_it_lasts():
    engine = AlertEngine(AlertRules(throttle_after_s=30))
    hot = {"active": True, "reasons": ["thermal (hotspot)"]}
    assert engine.feed(snap(gpu(A, throttle=hot)), now=0) == []
    assert engine.feed(snap(gpu(A, throttle={"active": False, "reasons": []})), now=20) == []  # it stopped
    assert engine.feed(snap(gpu(A, throttle=hot)), now=25) == []
    (alert,) = engine.feed(snap(gpu(A, throttle=hot)), now=60)
    assert alert.kind == "throttling" and "thermal (hotspot)" in alert.body and "35 s" in alert.body


def test_a_gpu_that_vanishes_alerts_and_others_do_not():
    engine = AlertEngine()
    assert engine.feed(snap(gpu(A), gpu(B)), now=0) == []
    (alert,) = engine.feed(snap(gpu(A)), now=1)
    assert alert.kind == "gpu-gone" and alert.pci == B.pci and "MI300X" in alert.body


def test_uncorrectable_ecc_growth_alerts_not_the_standing_count():
    engine = AlertEngine()
    assert engine.feed(snap(gpu(B, ue=4)), now=0) == []  # errors from before the app started: no alert
    (alert,) = engine.feed(snap(gpu(B, ue=6)), now=1)
    assert alert.kind == "ecc-uncorrectable" and "2 new" in alert.summary


def test_disabled_rules_say_nothing():
    assert AlertEngine(AlertRules(enabled=False)).feed(snap(gpu(A, 200)), now=0) == []


def test_hottest_and_the_notify_call():
    assert hottest(snap(gpu(A, 70), gpu(B, 81.5))) == ("MI300X", 81.5)
    assert hottest(snap()) is None
    alert = AlertEngine().feed(snap(gpu(A, 120)), now=0)[0]
    argv = notify_argv("/usr/bin/gdbus", alert)
    assert argv[0] == "/usr/bin/gdbus" and "org.freedesktop.Notifications.Notify" in argv
    assert "<byte 2>" in argv[-2]


def _mi300x(n: int) -> GpuInfo:
    return GpuInfo(card=f"card{n + 1}", pci=f"0000:{0x05 + 0x20 * n:02x}:00.0", name="AMD Instinct MI300X")


PPT = {"active": True, "reasons": ["power limit (PPT0)"]}


def test_eight_gpus_throttling_together_are_one_notification_that_names_each():
    engine = AlertEngine(AlertRules(throttle_after_s=30))
    node = [_mi300x(n) for n in range(8)]
    assert engine.feed(snap(*(gpu(i, throttle=PPT) for i in node)), now=0) == []
    (alert,) = engine.feed(snap(*(gpu(i, throttle=PPT) for i in node)), now=30)
    assert alert.kind == "throttling" and alert.summary == "8 × AMD Instinct MI300X are throttling"
    first, said = alert.body.split("\n")
    assert first.split("; ") == [f"{i.card}, {i.pci}" for i in node]
    assert said == "For 30 s: power limit (PPT0)."
    assert alert.pci.split(",") == [i.pci for i in node]
    # each GPU is still rate-limited on its own: nothing more within the cooldown
    assert engine.feed(snap(*(gpu(i, throttle=PPT) for i in node)), now=40) == []


def test_one_gpu_is_named_by_card_and_address_and_different_reasons_get_a_line_each():
    engine = AlertEngine(AlertRules(throttle_after_s=0))
    (alone,) = engine.feed(snap(gpu(_mi300x(2), throttle=PPT)), now=0)
    assert alone.summary == "AMD Instinct MI300X (card3, 0000:45:00.0) is throttling"
    hot = {"active": True, "reasons": ["thermal (hotspot)"]}
    (mixed,) = AlertEngine(AlertRules(throttle_after_s=0)).feed(
        snap(gpu(A, throttle=hot), gpu(B, throttle=PPT)), now=0)
    assert mixed.summary == "2 GPUs are throttling"
    assert mixed.body.split("\n") == ["card0, 0000:03:00.0: for 0 s: thermal (hotspot).",
                                      "card1, 0000:0c:00.0: for 0 s: power limit (PPT0)."]


def test_a_group_keeps_its_most_urgent_level_and_caps_its_lines():
    node = [GpuInfo(card=f"card{n}", pci=f"0000:{n + 1:02x}:00.0", name=f"GPU {n}") for n in range(10)]
    engine = AlertEngine()
    engine.feed(snap(*(gpu(i) for i in node)), now=0)
    (gone,) = engine.feed(snap(), now=1)  # the whole node fell off the bus
    assert gone.kind == "gpu-gone" and gone.urgency == "critical" and gone.summary == "10 GPUs disappeared"
    names, said = gone.body.split("\n")
    assert names.startswith("card0, 0000:01:00.0; card1, ") and names.endswith("card7, 0000:08:00.0; … and 2 more")
    assert said.startswith("No longer found. Check the kernel log")
    hot = [gpu(i, junction=100.0 + n, crit=100.0) for n, i in enumerate(node)]  # each its own detail
    (crit,) = AlertEngine().feed(snap(*hot), now=0)
    lines = crit.body.split("\n")
    assert crit.summary == "10 GPUs are at or over a critical temperature" and crit.urgency == "critical"
    assert len(lines) == 9 and lines[-1] == "… and 2 more"
    assert lines[0].startswith("card0, 0000:01:00.0: junction at 100")
