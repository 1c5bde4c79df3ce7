"""Shipped test helpers: conformance mixins any backend runs, and the loopback OpenAI-compatible server.

They need the `testing` extra (`pip install 'chronokg[testing]'`); nothing here is imported by chronokg itself.
"""
