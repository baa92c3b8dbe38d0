"""Agents: the evidence packet over the Model Context Protocol (``retrieval-kernel mcp``).

The server (:mod:`.mcp_server`) imports the ``mcp`` SDK, so import it only when serving; the
instruction-like passage detector it reports lives with the packet (:mod:`..output.instructions`).
"""
