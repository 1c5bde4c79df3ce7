"""Shipped test helpers: conformance mixins any backend runs (model clients, search providers), and loopback
servers standing in for the model (OpenAI-compatible) and for web search APIs.

They need the `testing` extra (`pip install 'chronokg[testing]'`); nothing here is imported by chronokg itself.
"""
