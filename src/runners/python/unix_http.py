"""An http.client connection to a Unix socket.

Container and process sandboxes have no network: they reach the core's MCP
endpoint through its socket, mounted into the sandbox, with the path of
`context.mcp_endpoint` (as src/runners/kit/unix-socket-fetch.ts does for the
Node runners). The Host header is the endpoint's host, whatever the socket.
"""

import http.client
import socket


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, socket_path, host, timeout):
        super().__init__(host, timeout=timeout)
        self._socket_path = socket_path

    def connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(self._socket_path)
        except BaseException:
            sock.close()
            raise
        self.sock = sock
