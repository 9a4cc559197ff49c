"""The ports, where the domain meets the infrastructure (docs/architecture.md, "The map: layers and ports"):
``storage`` (the ``Storage`` port), ``dispatch`` (the ``Dispatcher``), ``runtime`` (an agent's model runtime),
``channel`` (a delivery channel) and ``live`` (what the API's open requests ask of storage). The adapters
(``shared.store``, ``shared.adapters``, ``workers.dispatch``) implement them; the application uses them."""
