"""Foundations: text, clocks, backoff, the error classes, session keys, tool-argument readers, trace context,
and the derived ids of flow steps. The standard library (and the OpenTelemetry API) only: every other layer
of ``shared`` may use them (docs/architecture.md, "The map: layers and ports")."""
