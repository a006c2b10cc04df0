"""Words every surface shows the same way (window, reports, command line), kept in the Qt-free core."""

NA = "N/A"  # a value that is not available; the reason goes beside it (a tooltip, a footnote), never a 0
