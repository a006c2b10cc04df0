"""The window: the only package that imports PySide6 or pyqtgraph.

Start with :func:`rocmdesk.ui.app.run_gui`. Tabs get what they need from a shared
:class:`rocmdesk.ui.context.AppContext`; new tabs are added in :mod:`rocmdesk.ui.tabs`.
"""
