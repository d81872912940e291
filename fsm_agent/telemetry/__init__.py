"""OpenTelemetry export of runs (issue 13): spans built from the trace records of a run.

Nothing here is imported by ``import fsm_agent``; the span modules import the OpenTelemetry
SDK (the ``otel`` extra) only when telemetry is turned on.
"""
