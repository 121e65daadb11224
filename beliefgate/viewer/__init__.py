"""Look instead of read: an HTML episode report and a browser page to play with an agent.

* :mod:`beliefgate.viewer.report` -- ``beliefgate report LOG.jsonl -o report.html``: one
  self-contained HTML file (kitchen frame by frame, posterior, gate events, replans, κ).
* :mod:`beliefgate.viewer.play` -- ``beliefgate play``: FastAPI + WebSocket page where a
  person plays one chef with the keyboard beside an agent; logged as a trajectory log.
* :mod:`beliefgate.viewer.frames` -- what both pages draw, from the layout's domain.

FastAPI, uvicorn and selenium are imported inside the functions that need them.
"""
