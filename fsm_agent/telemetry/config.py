"""Whether a run exports spans, and where to: :class:`Telemetry` and the ``OTEL_*`` variables.

Telemetry is on when the agent is given ``telemetry=True`` or a :class:`Telemetry`, or, with
the default ``telemetry=None``, when the standard OpenTelemetry environment says so
(``OTEL_TRACES_EXPORTER`` other than ``none``, or ``OTEL_EXPORTER_OTLP_ENDPOINT`` /
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``), unless ``OTEL_SDK_DISABLED=true``.

The spans go to, in order: the tracer provider the :class:`Telemetry` names; the application's
global tracer provider, when it has set one; else a provider made once per process from the
environment: an OTLP/HTTP exporter (endpoint, headers, timeout from ``OTEL_EXPORTER_OTLP_*``)
behind a batch processor, or the console for ``OTEL_TRACES_EXPORTER=console``. The batch
processor exports on its own thread and is flushed when the process exits.

This module imports OpenTelemetry only when telemetry is on, so an agent without it never pays
for the import.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import attrs

from fsm_agent.errors import ConfigError

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer, TracerProvider

EXPORTERS_ENV: Final = "OTEL_TRACES_EXPORTER"
ENDPOINT_ENVS: Final = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
HEADERS_ENVS: Final = ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS")
PROTOCOL_ENVS: Final = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
DISABLED_ENV: Final = "OTEL_SDK_DISABLED"
SERVICE_ENV: Final = "OTEL_SERVICE_NAME"
SCOPE: Final = "fsm_agent"
"""The instrumentation scope the spans are created under."""
_INSTALL_HINT: Final = "pip install 'fsm_agent[otel]'"

_providers: dict[tuple[str, str, str], Any] = {}
"""Providers made from the environment, one per (exporters, endpoint, service name), kept for
the life of the process (each flushes its spans when the process exits)."""


def _endpoint_shown(endpoint: str | None) -> str:
    from fsm_agent.credentials import without_passwords  # noqa: PLC0415 - loaded when used

    return repr(endpoint if endpoint is None else without_passwords(endpoint, endpoint))


@attrs.frozen(kw_only=True)
class Telemetry:
    """Where a run's OpenTelemetry spans go (``Agent(telemetry=Telemetry(...))``).

    Attributes:
        tracer_provider: an OpenTelemetry ``TracerProvider`` to create the spans with (an
            SDK provider with your own processors, an ``InMemorySpanExporter`` in tests...).
            None: the application's global provider if it set one, else one made from the
            ``OTEL_*`` environment.
        endpoint: the OTLP/HTTP collector to export to, as its base URL
            (``http://127.0.0.1:4318``; ``/v1/traces`` is added), instead of the one the
            environment names. Ignored when ``tracer_provider`` is given. Its credentials
            (a password in the user info, a query parameter such as ``?token=``) are among
            the agent's secrets, and ``repr`` shows ``***`` in their place.
        service_name: ``service.name`` of the spans when ``OTEL_SERVICE_NAME`` is not set.
    """

    tracer_provider: Any = None
    endpoint: str | None = attrs.field(default=None, repr=_endpoint_shown)
    service_name: str = "fsm_agent"

    @property
    def secrets(self) -> tuple[str, ...]:
        """The credentials in ``endpoint``, which the agent keeps out of its traces and spans
        (DESIGN §8)."""
        from fsm_agent.credentials import url_passwords  # noqa: PLC0415 - loaded when used

        return () if self.endpoint is None else url_passwords(self.endpoint)


def enabled_by_environment(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the ``OTEL_*`` variables ask for spans to be exported."""
    env = os.environ if environ is None else environ
    if env.get(DISABLED_ENV, "").strip().lower() == "true":
        return False
    exporters = env.get(EXPORTERS_ENV, "").strip().lower()
    if exporters:
        return exporters != "none"
    return any(env.get(name, "").strip() for name in ENDPOINT_ENVS)


def telemetry_credentials(
    telemetry: Telemetry | bool | None, environ: Mapping[str, str] | None = None
) -> tuple[str, ...]:
    """The credentials spans are exported with, when telemetry is on (asked for, or by the
    environment): those of :attr:`Telemetry.endpoint`, the credential headers of
    ``OTEL_EXPORTER_OTLP_HEADERS`` and ``OTEL_EXPORTER_OTLP_TRACES_HEADERS``
    (:func:`~fsm_agent.credentials.otlp_header_credentials`), and the credentials of the
    endpoint URLs the environment names. The agent keeps them out of its traces and spans
    (DESIGN §8)."""
    from fsm_agent.credentials import otlp_header_credentials, url_passwords  # noqa: PLC0415

    env = os.environ if environ is None else environ
    if telemetry is False or (telemetry is None and not enabled_by_environment(env)):
        return ()
    found = list(telemetry.secrets) if isinstance(telemetry, Telemetry) else []
    for name in HEADERS_ENVS:
        found += otlp_header_credentials(env.get(name, ""))
    for name in ENDPOINT_ENVS:
        found += url_passwords(env.get(name, ""))
    return tuple(dict.fromkeys(found))


def tracer_for(
    telemetry: Telemetry | bool | None, environ: Mapping[str, str] | None = None
) -> Tracer | None:
    """The tracer a run's spans go to, or None when telemetry is off.

    Raises:
        ConfigError: telemetry was asked for explicitly and cannot work: the ``otel`` extra is
            not installed, or the environment names an exporter or protocol we cannot use.
    """
    env = os.environ if environ is None else environ
    if telemetry is False:
        return None
    if telemetry is None:
        if not enabled_by_environment(env):
            return None
        try:
            return _tracer(Telemetry(), env)
        except ConfigError as exc:
            # Asked for by the environment only (which may be set for another program):
            # run without spans, and say why.
            import logging  # noqa: PLC0415 - loaded when first used

            logging.getLogger("fsm_agent.telemetry").warning("no OpenTelemetry export: %s", exc)
            return None
    return _tracer(Telemetry() if telemetry is True else telemetry, env)


def _tracer(telemetry: Telemetry, env: Mapping[str, str]) -> Tracer:
    try:
        from opentelemetry import trace  # noqa: PLC0415 - only when telemetry is on
    except ImportError:
        raise ConfigError(f"telemetry needs the OpenTelemetry SDK: {_INSTALL_HINT}") from None
    from fsm_agent import __version__  # noqa: PLC0415 - the package imports this module lazily

    provider: TracerProvider | None = telemetry.tracer_provider
    if provider is None and telemetry.endpoint is None:
        current = trace.get_tracer_provider()
        # An application that set its own provider gets our spans there (the default one is a
        # proxy that drops everything until a provider is set).
        if not isinstance(current, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
            provider = current
    if provider is None:
        provider = _environment_provider(telemetry, env)
    return provider.get_tracer(SCOPE, __version__)


def _environment_provider(telemetry: Telemetry, env: Mapping[str, str]) -> TracerProvider:
    exporters = [
        name.strip().lower() for name in env.get(EXPORTERS_ENV, "otlp").split(",") if name.strip()
    ]
    if telemetry.endpoint is not None:
        exporters = ["otlp"]
    unknown = sorted(set(exporters) - {"otlp", "console"})
    if unknown:
        raise ConfigError(
            f"{EXPORTERS_ENV}={env.get(EXPORTERS_ENV)!r}: fsm_agent exports spans with 'otlp' "
            f"or 'console', not {', '.join(map(repr, unknown))}"
        )
    protocol = next((env[name] for name in PROTOCOL_ENVS if env.get(name)), "http/protobuf")
    if "otlp" in exporters and protocol.strip().lower() != "http/protobuf":
        raise ConfigError(
            f"OTLP protocol {protocol!r}: fsm_agent exports OTLP over HTTP; set "
            "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf (collectors listen on port 4318 for it)"
        )
    # The environment's endpoint is part of the key: a process that changes it gets a new
    # provider rather than spans sent to the old collector.
    endpoint = telemetry.endpoint or next(
        (env[name] for name in ENDPOINT_ENVS if env.get(name)), ""
    )
    key = (",".join(exporters), endpoint, telemetry.service_name)
    if key not in _providers:
        _providers[key] = _make_provider(exporters, telemetry, env)
    provider: TracerProvider = _providers[key]
    return provider


def _make_provider(exporters: list[str], telemetry: Telemetry, env: Mapping[str, str]) -> Any:
    try:
        from opentelemetry.sdk.resources import Resource  # noqa: PLC0415
        from opentelemetry.sdk.trace import TracerProvider  # noqa: PLC0415
        from opentelemetry.sdk.trace.export import (  # noqa: PLC0415
            BatchSpanProcessor,
            ConsoleSpanExporter,
            SpanExporter,
        )
    except ImportError:
        raise ConfigError(f"telemetry needs the OpenTelemetry SDK: {_INSTALL_HINT}") from None
    resource_attributes = {} if env.get(SERVICE_ENV) else {"service.name": telemetry.service_name}
    provider = TracerProvider(resource=Resource.create(resource_attributes))
    for name in exporters:
        exporter: SpanExporter
        if name == "console":
            exporter = ConsoleSpanExporter()
        else:
            try:
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # noqa: PLC0415
                    OTLPSpanExporter,
                )
            except ImportError:
                raise ConfigError(
                    f"OTLP export needs the OTLP/HTTP exporter: {_INSTALL_HINT}"
                ) from None
            endpoint = telemetry.endpoint
            exporter = OTLPSpanExporter(
                endpoint=None if endpoint is None else endpoint.rstrip("/") + "/v1/traces"
            )
        provider.add_span_processor(BatchSpanProcessor(_counting(exporter)))
    return provider


_failed_spans = [0]
"""Spans the providers made from the environment failed to export (a list: one count,
changed in the exporters' own threads)."""


def failed_span_exports() -> int:
    """How many spans the exporters made from the environment have failed to hand over
    (the collector refused them, or never answered) since this process started."""
    return _failed_spans[0]


def _counting(exporter: Any) -> Any:
    """``exporter``, counting the spans it fails to export (:func:`failed_span_exports`):
    the SDK only logs such a failure, and a command exporting spans must be able to say so."""
    from opentelemetry.sdk.trace.export import (  # noqa: PLC0415 - loaded with the provider
        SpanExporter,
        SpanExportResult,
    )

    class Counting(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            result: SpanExportResult = exporter.export(spans)
            if result is not SpanExportResult.SUCCESS:
                _failed_spans[0] += len(spans)
            return result

        def shutdown(self) -> None:
            exporter.shutdown()

        def force_flush(self, timeout_millis: int = 30_000) -> bool:
            flushed: bool = exporter.force_flush(timeout_millis)
            return flushed

    return Counting()


def flush_telemetry(timeout_s: float = 30.0) -> bool:
    """Export now the spans still queued in the providers made from the environment (they
    are also flushed when the process exits); returns whether every one of them finished in
    time. For short-lived programs that must not exit before their spans are out."""
    deadline_ms = int(timeout_s * 1000)
    return all(provider.force_flush(deadline_ms) for provider in _providers.values())
