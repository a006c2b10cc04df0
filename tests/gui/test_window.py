"""The window on demo data, LACT trees, an 8-GPU tree and scripted fakes."""

from __future__ import annotations

import itertools
import time

import pytest

from rocmdesk.ui.formatting import NA
from rocmdesk.ui.settings import Settings
from tests.gui.conftest import FakeBackend, ManualSampler, demo_small, fake_source, make_sample
from tests.support.sysfs_tree import GpuSpec, build_root

pytestmark = pytest.mark.gui


def _wait_snapshot(qtbot, session, timeout=8000):
    qtbot.waitUntil(lambda: session.feed.last_snapshot is not None and not session.feed.loading, timeout=timeout)


def test_demo_window_has_three_tabs_cards_and_full_graphs(qtbot, open_window):
    session = open_window(demo_small())
    window = session.window
    _wait_snapshot(qtbot, session)
    assert list(window.tab_widgets)[:3] == ["overview", "graphs", "processes"]
    titles = [window.tabs.tabText(i) for i in range(window.tabs.count())]
    assert titles[:3] == ["Overview", "Graphs", "Processes"]
    # no empty placeholders: every tab is a real widget from an existing module
    assert all(window.tab_widgets[k] is window.tabs.widget(i) for i, k in enumerate(window.tab_widgets))
    assert window.banner.isVisible() and "Demo data" in window.banner.title.text()
    overview = window.tab_widgets["overview"]
    qtbot.waitUntil(lambda: len(overview.cards) == 8, timeout=5000)
    card = next(iter(overview.cards.values()))
    qtbot.waitUntil(lambda: card.sample is not None, timeout=5000)
    assert card.memory.caption.text() == "HBM"  # Instinct
    edge = card.temps["edge"]  # MI300X has no edge sensor: N/A with the recording's reason
    assert edge.value.text() == NA and "no edge sensor" in edge.value.toolTip()
    assert card.fan.value.text() == NA and "fan" in card.fan.value.toolTip()
    window.show_tab("graphs")
    graphs = window.tab_widgets["graphs"]
    qtbot.waitUntil(lambda: graphs.draw_count > 0, timeout=5000)
    drawn = [c for c in graphs.curves if not c.step]
    assert drawn and all(c.item.xData is not None and len(c.item.xData) > 10 for c in drawn)
    # MI300X: junction and mem curves only
    assert {c.key for c in drawn if c.temp} == {"temperature_c.junction", "temperature_c.mem"}
    assert session.ctx.mode == "demo" and session.ctx.feed.is_demo


def test_graphs_receive_new_samples_and_redraw(qtbot, open_window, manual_factory):
    backend = FakeBackend(2)
    session = open_window(fake_source(backend), sampler_factory=manual_factory)
    sampler = manual_factory.made[0]
    sampler.tick()
    _wait_snapshot(qtbot, session)
    window = session.window
    window.show_tab("graphs")
    graphs = window.tab_widgets["graphs"]
    graphs.set_window(60)
    for _ in range(5):
        sampler.tick()
        time.sleep(0.01)
    qtbot.waitUntil(lambda: graphs.draw_count > 0, timeout=3000)
    before = graphs.draw_count
    busy = [c for c in graphs.curves if c.key == "gpu_busy_percent"]
    assert len(busy) == 2
    n_before = len(busy[0].item.xData)
    time.sleep(0.05)
    sampler.tick()
    qtbot.waitUntil(lambda: graphs.draw_count > before, timeout=3000)
    assert len(busy[0].item.xData) == n_before + 1
    # pause: samples are still recorded, but nothing is redrawn
    graphs.set_paused(True)
    paused_at = graphs.draw_count
    for _ in range(3):
        sampler.tick()
    qtbot.wait(100)
    assert graphs.draw_count == paused_at
    assert len(session.feed.history[backend.infos[0].pci]) == 10
    graphs.set_paused(False)
    qtbot.waitUntil(lambda: graphs.draw_count > paused_at, timeout=3000)
    # crosshair read-out names each GPU with its value
    t = float(session.feed.last_snapshot.timestamp)
    text = graphs.show_readout("busy", t)
    assert "card0 · RX 7900 XTX busy:" in text and "card1 · RX 7900 XTX busy:" in text and " %" in text


def test_not_available_values_render_as_na_with_reason(qtbot, open_window, manual_factory):
    def sample_fn(info, t, i):
        s = make_sample(info, t, i)
        s.power_w = None
        s.unavailable["power_w"] = "unreadable (permission denied)"
        s.temperature_c.pop("edge")
        s.unavailable["temperature_c.edge"] = "this GPU has no edge sensor"
        s.fan_rpm = s.fan_percent = None
        s.unavailable["fan_rpm"] = "garbage value '12ab'"
        return s

    backend = FakeBackend(1, sample_fn)
    session = open_window(fake_source(backend), sampler_factory=manual_factory)
    manual_factory.made[0].tick()
    _wait_snapshot(qtbot, session)
    card = next(iter(session.window.tab_widgets["overview"].cards.values()))
    qtbot.waitUntil(lambda: card.sample is not None, timeout=3000)
    assert card.power.value.text() == NA
    assert card.power.value.toolTip() == "unreadable (permission denied)"
    assert card.power.bar.fraction is None  # no fake 0 on the meter either
    assert card.temps["edge"].value.text() == NA
    assert card.temps["edge"].value.toolTip() == "this GPU has no edge sensor"
    assert card.fan.value.text() == NA and card.fan.value.toolTip() == "garbage value '12ab'"
    assert card.temps["junction"].value.text().endswith("°C")
    assert "0 W" not in card.power.value.text()


def test_gpu_vanishes_and_reappears(qtbot, open_window, manual_factory):
    backend = FakeBackend(2)
    session = open_window(fake_source(backend), sampler_factory=manual_factory)
    sampler = manual_factory.made[0]
    sampler.tick()
    _wait_snapshot(qtbot, session)
    overview = session.window.tab_widgets["overview"]
    gone_pci = backend.infos[1].pci
    qtbot.waitUntil(lambda: len(overview.cards) == 2, timeout=3000)
    backend.present.discard(gone_pci)
    sampler.tick()
    qtbot.waitUntil(lambda: overview.cards[gone_pci].state == "gone", timeout=3000)
    assert overview.cards[gone_pci].state_chip.text() == "REMOVED"
    assert overview.cards[backend.infos[0].pci].state == "ok"
    assert not session.feed.history[gone_pci].present  # history continues with a gap
    backend.present.add(gone_pci)
    sampler.tick()
    qtbot.waitUntil(lambda: overview.cards[gone_pci].state == "ok", timeout=3000)
    graphs = session.window.tab_widgets["graphs"]
    assert {c.pci for c in graphs.curves} == {i.pci for i in backend.infos}


def test_reset_event_shows_on_card_and_graph(qtbot, open_window, manual_factory):
    from rocmdesk.telemetry.hotplug import classify

    backend = FakeBackend(1)
    session = open_window(fake_source(backend), sampler_factory=manual_factory)
    manual_factory.made[0].tick()
    _wait_snapshot(qtbot, session)
    event = classify("change", "card0", {"WEDGED": "none"})
    session.feed._on_hotplug(event)
    card = session.window.tab_widgets["overview"].cards[backend.infos[0].pci]
    assert card.event_chip.isVisible() and card.event_chip.text().startswith("GPU RESET")
    graphs = session.window.tab_widgets["graphs"]
    assert len(graphs.markers) == len(graphs.plots) == 6  # one line per plot
    assert "GPU reset" in session.window.statusBar().currentMessage()


def test_hung_backend_marks_stale_and_window_stays_responsive(qtbot, open_window):
    from rocmdesk.telemetry.sampler import Sampler

    def factory(backend, rate_hz, on_snapshot, on_status):
        return Sampler(backend, on_snapshot, rate_hz=10.0, deadline_s=0.4, on_status=on_status)

    backend = FakeBackend(1)
    session = open_window(fake_source(backend), sampler_factory=factory)
    _wait_snapshot(qtbot, session)
    backend.hang.set()
    window = session.window
    ticks = []
    from PySide6 import QtCore

    timer = QtCore.QTimer()
    timer.setInterval(50)
    timer.timeout.connect(lambda: ticks.append(time.monotonic()))
    timer.start()
    try:
        qtbot.waitUntil(lambda: window.stale_label.isVisible(), timeout=5000)
        assert "stale" in window.stale_label.text()
        card = next(iter(window.tab_widgets["overview"].cards.values()))
        assert card.state == "stale"
        # the GUI thread kept running its timers while the backend hung
        assert len(ticks) >= 5 and max(b - a for a, b in itertools.pairwise(ticks)) < 0.5
    finally:
        timer.stop()
        backend.hang.clear()
        backend.release.set()
    qtbot.waitUntil(lambda: not window.stale_label.isVisible(), timeout=5000)
    assert card.state == "ok"


@pytest.mark.parametrize("dumps", [["rx7900xtx", "rx6600"], ["phoenix"], ["vega56", "rx580"]])
def test_window_on_lact_trees(qtbot, open_window, tmp_path, dumps):
    from rocmdesk.ui.sources import root_source

    specs = [GpuSpec(d, pci=f"0000:{10 + n:02x}:00.0") for n, d in enumerate(dumps)]
    root = build_root(tmp_path / "root", specs)
    source = root_source(str(root), "sysfs")
    assert source.mode == "snapshot"
    session = open_window(source)
    _wait_snapshot(qtbot, session)
    overview = session.window.tab_widgets["overview"]
    qtbot.waitUntil(lambda: len(overview.cards) == len(dumps), timeout=5000)
    qtbot.waitUntil(lambda: all(c.sample is not None for c in overview.cards.values()), timeout=5000)
    for card in overview.cards.values():
        for metric in card.metrics:
            if metric.value.text() == NA:
                assert metric.value.toolTip(), f"{card.info.name} {metric.accessibleName()}: N/A without reason"
        for readout in card.temps.values():
            assert readout.value.toolTip()
    assert session.window.banner.isVisible() and "Snapshot" in session.window.banner.title.text()


def test_eight_gpu_tree_fits_1920x1080_without_scrolling(qtbot, open_window, tmp_path):
    from rocmdesk.ui.sources import root_source

    specs = [GpuSpec("rx7900xtx", pci=f"0000:{0x10 + n:02x}:00.0") for n in range(8)]
    root = build_root(tmp_path / "root", specs)
    session = open_window(root_source(str(root), "sysfs"), size=(1920, 1080))
    _wait_snapshot(qtbot, session)
    overview = session.window.tab_widgets["overview"]
    qtbot.waitUntil(lambda: len(overview.cards) == 8, timeout=5000)
    qtbot.wait(50)
    assert not overview.scroll.verticalScrollBar().isVisible()
    assert overview.grid.columnCount() >= 4
    for card in overview.cards.values():
        assert card.isVisible() and card.height() >= card.minimumSizeHint().height()


def test_settings_round_trip_through_the_window(qtbot, open_window, manual_factory):
    settings = Settings(rate_hz=2.0, temp_unit="F", theme="dark", graph_window_s=900, last_tab="graphs")
    backend = FakeBackend(2)
    session = open_window(fake_source(backend), settings=settings, sampler_factory=manual_factory)
    window = session.window
    assert window.current_tab_key() == "graphs"
    assert window.rate_combo.currentData() == 2.0
    manual_factory.made[0].tick()
    _wait_snapshot(qtbot, session)
    window.rate_combo.setCurrentIndex(window.rate_combo.findData(5.0))
    assert manual_factory.made[0].rate_hz == 5.0 and session.feed.rate_hz == 5.0
    window.tab_widgets["graphs"].set_window(21600)
    window.set_selected_gpus([backend.infos[1].pci])
    window.resize(1300, 850)
    window.show_tab("overview")  # hidden tabs skip updates; shown, they catch up at once
    card = window.tab_widgets["overview"].cards[backend.infos[1].pci]
    assert "°F" in card.temps["junction"].value.text()
    window.show_tab("graphs")
    window.close()
    loaded = Settings.load()
    assert loaded.rate_hz == 5.0 and loaded.temp_unit == "F" and loaded.theme == "dark"
    assert loaded.graph_window_s == 21600 and loaded.selected_gpus == [backend.infos[1].pci]
    assert loaded.geometry and loaded.last_tab == "graphs"


def test_screenshot_action_writes_png_of_current_tab(qtbot, open_window, manual_factory, tmp_path):
    session = open_window(fake_source(FakeBackend(1)), sampler_factory=manual_factory, size=(1000, 700))
    manual_factory.made[0].tick()
    _wait_snapshot(qtbot, session)
    path = session.window.save_screenshot(str(tmp_path / "shot.png"))
    assert path and (tmp_path / "shot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bad = session.window.save_screenshot("/proc/forbidden/shot.png")
    assert bad is None and "not saved" in session.window.statusBar().currentMessage()


def test_empty_root_says_no_gpu_instead_of_waiting(qtbot, open_window, tmp_path):
    from rocmdesk.ui.sources import root_source

    (tmp_path / "empty" / "sys").mkdir(parents=True)
    session = open_window(root_source(str(tmp_path / "empty"), "sysfs"))
    overview = session.window.tab_widgets["overview"]
    qtbot.waitUntil(lambda: "No AMD GPU found" in overview.empty.text(), timeout=5000)
    assert str(tmp_path / "empty") in overview.empty.text()
    assert overview.cards == {}


def test_startup_without_gpu_opens_demo_with_reason():
    from rocmdesk.host import HostRoot
    from rocmdesk.telemetry.backends.demo import choose_startup_source
    from rocmdesk.ui.sources import startup_source

    if choose_startup_source(HostRoot("/"))[0] == "live":
        pytest.skip("this machine has an AMD GPU")
    source = startup_source()
    assert source.mode == "demo" and "no amd gpu found" in source.reason.lower()
    assert source.backend.demo


def test_bad_bundle_is_a_clear_error(tmp_path):
    from rocmdesk.report.bundle import BundleError
    from rocmdesk.ui.sources import startup_source

    bad = tmp_path / "garbage.tar.gz"
    bad.write_bytes(b"not a bundle")
    with pytest.raises(BundleError):
        startup_source(open_bundle=str(bad))


# -- window geometry and layout (settings.geometry / settings.window_state) -------------------------


def _open_raw(qtbot, settings, backend=None):
    """A session without the fixture's resize, so the restored geometry is what we look at."""
    from rocmdesk.ui.app import make_app, open_session

    make_app()
    session = open_session(fake_source(backend or FakeBackend(1)), settings, hotplug=False,
                           sampler_factory=ManualSampler)
    qtbot.addWidget(session.window)
    return session


def _foreign_state(version: int) -> str:
    """saveState() of a window whose toolbar, named like ours, is hidden on the left next to a dock."""
    from PySide6 import QtCore, QtWidgets

    other = QtWidgets.QMainWindow()
    bar = QtWidgets.QToolBar("other", other)
    bar.setObjectName("mainToolbar")
    other.addToolBar(QtCore.Qt.ToolBarArea.LeftToolBarArea, bar)
    bar.hide()
    dock = QtWidgets.QDockWidget("dock", other)
    dock.setObjectName("someDock")
    other.addDockWidget(QtCore.Qt.DockWidgetArea.RightDockWidgetArea, dock)
    state = bytes(other.saveState(version).toHex()).decode("ascii")
    other.deleteLater()
    return state


def test_geometry_and_layout_round_trip_through_settings(qtbot):
    from PySide6 import QtCore

    from rocmdesk.ui.main_window import STATE_VERSION

    first = _open_raw(qtbot, Settings())
    window = first.window
    window.resize(700, 520)
    window.move(40, 30)
    window.show()
    qtbot.waitExposed(window)
    expected_state = bytes(window.saveState(STATE_VERSION).toHex()).decode("ascii")
    window.close()
    first.close()
    loaded = Settings.load()
    assert loaded.geometry and loaded.window_state == expected_state
    assert bytes.fromhex(loaded.window_state)  # valid hex, not empty
    second = _open_raw(qtbot, loaded)
    try:
        assert (second.window.width(), second.window.height()) == (700, 520)
        assert second.window.toolBarArea(second.window.toolbar) == QtCore.Qt.ToolBarArea.TopToolBarArea
        assert not second.window.toolbar.isHidden()
        assert bytes(second.window.saveState(STATE_VERSION).toHex()).decode("ascii") == expected_state
    finally:
        second.window.close()
        second.close()


@pytest.mark.parametrize("geometry, state", [
    ("zz-not-hex", "not hex either"),
    ("", ""),
    ("deadbeef", "0123456789abcdef"),  # hex, but not a Qt geometry/state blob
    ("0", "abc"),  # odd number of digits
    ("", "foreign:1"),  # saved by another layout with our version number
    ("", "foreign:7"),  # saved by another version
])
def test_bad_geometry_or_layout_opens_the_default_layout(qtbot, geometry, state):
    from PySide6 import QtCore

    from rocmdesk.ui.main_window import STATE_VERSION

    if state.startswith("foreign:"):
        state = _foreign_state(int(state.split(":")[1]))
    session = _open_raw(qtbot, Settings(geometry=geometry, window_state=state))
    window = session.window
    try:
        from rocmdesk.ui.main_window import default_size

        expected = default_size(window.screen().availableGeometry())  # 1440x900, or what fits this screen
        assert (window.width(), window.height()) == (expected.width(), expected.height())
        assert window.toolBarArea(window.toolbar) == QtCore.Qt.ToolBarArea.TopToolBarArea
        assert not window.toolbar.isHidden()
        window.show()
        qtbot.waitExposed(window)
        assert window.toolbar.isVisible() and window.tabs.isVisible()
        assert window.toolbar.geometry().top() <= window.tabs.geometry().top()
        window.remember()  # what gets saved next time is this window's own, valid layout
        assert window.restoreState(QtCore.QByteArray.fromHex(window.ctx.settings.window_state.encode()),
                                   STATE_VERSION)
    finally:
        window.close()
        session.close()


def test_geometry_saved_off_screen_comes_back_on_a_screen(qtbot):
    from PySide6 import QtGui, QtWidgets

    other = QtWidgets.QMainWindow()
    other.resize(600, 400)
    other.move(9000, 7000)  # a monitor that is no longer connected
    geometry = bytes(other.saveGeometry().toHex()).decode("ascii")
    other.deleteLater()
    session = _open_raw(qtbot, Settings(geometry=geometry))
    window = session.window
    try:
        screens = [s.availableGeometry() for s in QtGui.QGuiApplication.screens()]
        assert any(area.contains(window.geometry().topLeft()) for area in screens)
        assert any(area.intersected(window.geometry()).width() >= 160 for area in screens)
    finally:
        window.close()
        session.close()


def _rect(x, y, w, h):
    from PySide6 import QtCore

    return QtCore.QRect(x, y, w, h)


@pytest.mark.parametrize("rect, screens, expected", [
    # fully on the primary screen: kept as is
    ((100, 80, 1200, 800), [(0, 0, 1920, 1080)], (100, 80, 1200, 800)),
    # on the second monitor, still connected: kept
    ((2000, 100, 1200, 800), [(0, 0, 1920, 1080), (1920, 0, 2560, 1440)], (2000, 100, 1200, 800)),
    # on the second monitor, now gone: centred on the primary one
    ((2000, 100, 1200, 800), [(0, 0, 1920, 1080)], (360, 140, 1200, 800)),
    # title bar above the top of the screen (cannot be grabbed): moved
    ((100, -300, 800, 600), [(0, 0, 1920, 1080)], (560, 240, 800, 600)),
    # only a sliver on screen at the right edge: moved
    ((1880, 100, 800, 600), [(0, 0, 1920, 1080)], (560, 240, 800, 600)),
    # larger than the (laptop) screen it is on: shrunk to it
    ((0, 0, 1920, 1080), [(0, 0, 1280, 800)], (0, 0, 1280, 800)),
])
def test_fit_on_screen(rect, screens, expected):
    from rocmdesk.ui.main_window import fit_on_screen

    areas = [_rect(*s) for s in screens]
    placed = fit_on_screen(_rect(*rect), areas, areas[0])
    assert placed.getRect() == expected


@pytest.mark.parametrize("text, ok", [("", False), ("zz", False), ("abc", False), ("0a0B", True), (None, False)])
def test_decode_hex(text, ok):
    from rocmdesk.ui.main_window import decode_hex

    result = decode_hex(text)
    assert (result is not None) == ok
    if ok:
        assert bytes(result) == bytes.fromhex(text)


def test_settings_keep_geometry_and_layout_and_drop_wrong_types(tmp_path):
    import json

    path = tmp_path / "settings.json"
    Settings(geometry="01d9d0cb", window_state="000000ff").save(path)
    loaded = Settings.load(path)
    assert (loaded.geometry, loaded.window_state) == ("01d9d0cb", "000000ff")
    path.write_text(json.dumps({"geometry": 12, "window_state": ["x"], "rate_hz": 2.0}))
    loaded = Settings.load(path)
    assert (loaded.geometry, loaded.window_state, loaded.rate_hz) == ("", "", 2.0)
