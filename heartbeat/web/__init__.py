"""hb's dashboard: read-only pages served by ``hb serve`` (see :mod:`heartbeat.web.app`).

:mod:`~heartbeat.web.pages` builds each page's data (its JSON) from the ledger,
reading through :mod:`~heartbeat.web.queries` in one read-only snapshot;
:mod:`~heartbeat.web.render` turns it into HTML with Jinja2 templates (the
``[web]`` extra) and :mod:`~heartbeat.web.charts` draws the charts as inline SVG.
"""
