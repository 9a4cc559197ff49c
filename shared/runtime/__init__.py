"""Agent runtimes behind one protocol (``base``), chosen by the agent's model ref in ``registry``."""
